#![allow(dead_code)]
pub mod synthetic;
