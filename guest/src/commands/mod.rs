pub mod change;
pub mod generate;
pub mod run;
pub mod scan;
pub mod unpack;
pub mod verify;
