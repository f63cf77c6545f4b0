pub mod change;
pub mod generate;
pub mod run;
pub mod unpack;
pub mod verify;
