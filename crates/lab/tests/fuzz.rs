//! Whatever is fed to the loader, it answers with a lab or an error, never
//! a panic: random YAML-ish text, and mutations of the shipped labs (lines
//! deleted or duplicated, so keys repeat; characters swapped; truncation).

use labrun_lab::{Lab, PlanOverrides};
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::path::Path;

fn shipped_texts() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    ["lab.yaml", "labs/restic-borg-kopia.yaml"]
        .iter()
        .map(|p| std::fs::read_to_string(root.join(p)).unwrap())
        .collect()
}

/// Everything a caller may do with the result must not panic either.
fn exercise(text: &str) {
    match Lab::from_text(text, "fuzz.yaml") {
        Ok(lab) => {
            let _ = lab.describe(Some(0.5));
            let _ = lab.to_plan("r", &PlanOverrides::default());
        }
        Err(e) => {
            let message = e.to_string();
            let _ = e.problems();
            speaks_the_labs_language(&message, text);
        }
    }
}

/// Words of the Rust program, not of the lab file: a message holding one
/// leaks an implementation detail where it should say what to write.
const RUST_INTERNALS: &[&str] = &[
    "Option<",
    "Vec<",
    "Map<",
    "Box<",
    "internally tagged",
    "enum ",
    "struct ",
    "Budget",
    "DatasetSpec",
    "ToolSpec",
    "ArtifactSpec",
    "ImageSpec",
    "CommandSpec",
    "u64",
    "u32",
    "f64",
    "usize",
    "unit value",
];

/// A word the input itself holds may come back quoted (`found `...7u64`,
/// expected ...`): only the loader's own words are held to it.
fn speaks_the_labs_language(message: &str, input: &str) {
    if let Ok(path) = std::env::var("LABRUN_FUZZ_MESSAGES") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
        {
            let _ = writeln!(f, "{}", message.replace('\n', " | "));
        }
        // Collecting the messages does not switch the check off.
    }
    for word in RUST_INTERNALS.iter().filter(|w| !input.contains(**w)) {
        assert!(
            !message.contains(word),
            "a message speaks Rust (`{word}`): {message}"
        );
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapChars(usize),
    Insert(usize, char),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        any::<usize>().prop_map(Mutation::SwapChars),
        (
            any::<usize>(),
            prop::sample::select(vec![
                ':', '-', '[', ']', '{', '}', ' ', '\n', '"', '\'', '#', '&', '*', '!', '|', '>',
                '\t', 'x', '0', '\u{e9}'
            ])
        )
            .prop_map(|(i, c)| Mutation::Insert(i, c)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    let mut chars: Vec<char> = text.chars().collect();
    // An earlier mutation of the chain may have left too little to mutate.
    if lines.is_empty() || chars.len() < 2 {
        return text.to_string();
    }
    match *m {
        Mutation::DeleteLine(i) => {
            lines.remove(i % lines.len());
            lines.join("\n")
        }
        Mutation::DuplicateLine(i) => {
            let i = i % lines.len();
            lines.insert(i, lines[i]);
            lines.join("\n")
        }
        Mutation::SwapChars(i) => {
            let i = i % (chars.len() - 1);
            chars.swap(i, i + 1);
            chars.into_iter().collect()
        }
        Mutation::Insert(i, c) => {
            chars.insert(i % chars.len(), c);
            chars.into_iter().collect()
        }
        Mutation::Truncate(i) => chars[..i % chars.len()].iter().collect(),
    }
}

proptest! {
    #![proptest_config(Config { cases: 400, failure_persistence: None, ..Config::default() })]

    #[test]
    fn mutated_shipped_labs_never_panic(which in 0usize..2, ms in prop::collection::vec(mutation(), 1..4)) {
        let mut text = shipped_texts().swap_remove(which);
        for m in &ms {
            text = apply(&text, m);
        }
        exercise(&text);
    }

    #[test]
    fn random_yaml_like_text_never_panics(text in "[a-z_:\\-\\[\\]{}\"' #&*!|>,.0-9\n\t]{0,300}") {
        exercise(&text);
    }

    #[test]
    fn random_unicode_never_panics(text in "\\PC{0,200}") {
        exercise(&text);
    }
}

#[test]
fn hostile_inputs_fail_fast() {
    let deep = "[".repeat(100_000);
    let bomb = {
        let mut s = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 0..12 {
            let prev = if i == 0 {
                "a".to_string()
            } else {
                format!("a{}", i - 1)
            };
            s.push_str(&format!("a{i}: &a{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
        }
        s
    };
    let many_docs = "name: x\n---\n".repeat(1000);
    for text in [deep, bomb, many_docs] {
        let start = std::time::Instant::now();
        let err = Lab::from_text(&text, "hostile.yaml").unwrap_err();
        assert!(err.to_string().starts_with("hostile.yaml:"), "{err}");
        speaks_the_labs_language(&err.to_string(), &text);
        assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
    }
    let big = "#".repeat((labrun_lab::MAX_LAB_BYTES + 1) as usize);
    assert!(matches!(
        Lab::from_text(&big, "big.yaml"),
        Err(labrun_lab::LabError::TooLarge { .. })
    ));
}
