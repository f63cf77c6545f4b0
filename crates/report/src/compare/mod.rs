//! Verdicts between two versions or settings of a tool: "is the candidate
//! slower than the baseline?", per timed phase and figure, with a ratio, its
//! interval and `slower` / `faster` / `no change` / `inconclusive`.
//!
//! [`compare_paired`] (two tools of one run, interleaved cycle by cycle) and
//! [`compare_unpaired`] (two runs) are pure functions from evidence to a
//! [`Comparison`]; [`compare`] loads run folders first and refuses runs from
//! different machines, datasets or protocols; [`write`] puts `compare.md` and `compare.json` into
//! the candidate's run folder. The method is in [`method::text`].

mod build;
mod datasets;
pub mod error;
pub mod figure;
pub mod floor;
mod machines;
pub mod method;
pub mod model;
pub mod render;
mod requested;
mod row;
mod run;
pub mod sequential;
pub mod settings;
pub mod stats;
pub mod verdict;

pub use build::{compare_paired, compare_unpaired, tool_names};
pub use datasets::differences as dataset_differences;
pub use error::CompareError;
pub use figure::{CpuSource, Figure, FigureDef};
pub use floor::{FloorMark, NoiseFloor};
pub use machines::differences as machine_differences;
pub use model::{
    COMPARISON_VERSION, Comparison, Design, Row, Side, SideFigure, TestResult, Verdict,
};
pub use requested::{keep_asked, lab_settings, noise_floor, requested};
pub use run::{HTML_FILE, JSON_FILE, MARKDOWN_FILE, Request, compare, to_json, write};
pub use settings::{Settings, parse_fraction};
