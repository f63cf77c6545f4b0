//! Rendering the agent's events. Three displays share one trait: a live one
//! for terminals (indicatif), a line-per-event one for logs and CI, and a
//! quiet one that prints only warnings.
//!
//! Every event comes from the guest (or a remote machine): its tool names,
//! messages and errors are escaped before they reach the terminal, each kept
//! on its own line (see `crate::terminal`).

use crate::terminal::{bar_line, bar_text, one_line};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use labrun_evidence::{Event, Step, StepRecord};
use std::io::IsTerminal;
use std::time::Duration;

pub trait Display {
    fn event(&mut self, event: &Event);
    /// A message from the host side (pushing the agent, pulling...).
    fn note(&mut self, message: &str);
    fn finish(&mut self);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Live,
    Plain,
    Quiet,
}

impl Mode {
    /// Live on a terminal, plain otherwise (CI, pipes), quiet on request.
    pub fn choose(quiet: bool, plain: bool) -> Mode {
        if quiet {
            Mode::Quiet
        } else if plain || !std::io::stderr().is_terminal() {
            Mode::Plain
        } else {
            Mode::Live
        }
    }

    pub fn display(self) -> Box<dyn Display + Send> {
        match self {
            Mode::Live => Box::new(Live::new()),
            Mode::Plain => Box::new(Plain),
            Mode::Quiet => Box::new(Quiet),
        }
    }
}

/// One line per finished step, the figures a reader wants at a glance.
pub fn step_line(r: &StepRecord) -> String {
    let who = tool_or_dataset(&r.tool);
    let mut line = format!(
        "{who:<10} cycle {:<2} {:<19} {:>8.1} s",
        r.cycle,
        r.step.as_str(),
        r.wall_secs
    );
    if r.timed {
        line.push_str(&format!(
            "  user {:.1} s  sys {:.1} s  peak {} MiB",
            r.user_secs,
            r.sys_secs,
            r.max_rss_kib / 1024
        ));
        // The whole tree's peak, when the step had a cgroup.
        if let Some(b) = r.tree.as_ref().and_then(|t| t.resident_peak_bytes) {
            line.push_str(&format!(" (tree {} MiB)", b >> 20));
        }
        if let Some(t) = r.tree.as_ref().filter(|t| !t.leftovers.is_empty()) {
            line.push_str(&format!(
                "  left running, killed: {}",
                one_line(&t.leftovers.join(", "))
            ));
        }
    }
    if let Some(size) = r.repo_size_bytes {
        line.push_str(&format!(
            "  repo {}",
            labrun_evidence::human::bytes(size as f64)
        ));
    }
    if let Some(v) = &r.verify {
        line.push_str(if v.passed {
            "  restore verified"
        } else {
            "  RESTORE MISMATCH"
        });
        // A restore over an older tree: what the tool's mode did with the
        // files only that tree had (kept is its mode, not a failure).
        match v.older_files {
            Some(labrun_evidence::OlderFiles::Kept) => line.push_str(&format!(
                ", kept {} older file(s) it does not hold",
                v.extra
            )),
            Some(labrun_evidence::OlderFiles::Removed) => line.push_str(", older files removed"),
            None => {}
        }
    }
    if let Some(k) = r.planned_kill.as_ref() {
        line.push_str(&if k.killed {
            format!("  killed as planned after {:.1} s", k.after_secs)
        } else {
            format!("  finished before its kill point ({:.1} s)", k.after_secs)
        });
    }
    if !r.ok {
        // A failure the protocol allows is news, not an alarm.
        let what = if r.may_fail {
            "failed (allowed by the protocol)"
        } else {
            "FAILED"
        };
        line.push_str(&format!(
            "  {what}: {}",
            one_line(r.error.as_deref().unwrap_or("see the step's stderr log"))
        ));
    }
    line
}

pub(crate) fn plain_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::RunStarted {
            run_id,
            tools,
            cycles,
        } => format!(
            "run {}: {} x {cycles} cycles ({})",
            one_line(run_id),
            tools.len(),
            one_line(&tools.join(", "))
        ),
        Event::DatasetProgress { .. } => return None,
        Event::StepStarted { tool, cycle, step } => {
            format!("{:<10} cycle {cycle:<2} {step} ...", tool_or_dataset(tool))
        }
        Event::StepFinished { record } => step_line(record),
        Event::CycleFinished { tool, cycle, ok } => format!(
            "{:<10} cycle {cycle:<2} {}",
            one_line(tool),
            if *ok { "done" } else { "FAILED" }
        ),
        Event::Warning { message } => format!("warning: {}", one_line(message)),
        Event::RunFinished {
            ok,
            stopped_because,
        } => match stopped_because {
            Some(why) => format!("run stopped early: {}", one_line(why)),
            None if *ok => "run finished: every step passed".to_string(),
            None => "run finished with failed steps".to_string(),
        },
    })
}

/// The step's tool from the event, escaped; "dataset" for the dataset's steps.
fn tool_or_dataset(tool: &str) -> std::borrow::Cow<'_, str> {
    if tool.is_empty() {
        "dataset".into()
    } else {
        one_line(tool)
    }
}

pub struct Plain;

impl Display for Plain {
    fn event(&mut self, event: &Event) {
        if let Some(line) = plain_line(event) {
            safe_eprintln!("{line}");
        }
    }
    fn note(&mut self, message: &str) {
        // The host's words, quoting paths and remote text: lines kept.
        safe_eprintln!("{message}");
    }
    fn finish(&mut self) {}
}

pub struct Quiet;

impl Display for Quiet {
    fn event(&mut self, event: &Event) {
        if let Event::Warning { message } = event {
            safe_eprintln!("warning: {}", one_line(message));
        }
    }
    fn note(&mut self, _: &str) {}
    fn finish(&mut self) {}
}

/// A status line (tool, cycle, step) with a spinner and elapsed time, and a
/// byte bar while the dataset is written; finished steps scroll above.
pub struct Live {
    multi: MultiProgress,
    spinner: Option<ProgressBar>,
    bytes: Option<ProgressBar>,
}

impl Live {
    fn new() -> Live {
        Live {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            spinner: None,
            bytes: None,
        }
    }

    fn clear(&mut self) {
        for bar in [self.spinner.take(), self.bytes.take()]
            .into_iter()
            .flatten()
        {
            bar.finish_and_clear();
        }
    }
}

impl Display for Live {
    fn event(&mut self, event: &Event) {
        match event {
            Event::StepStarted { tool, cycle, step } => {
                self.clear();
                let bar = self.multi.add(ProgressBar::new_spinner());
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_message(bar_line(&format!(
                    "{} cycle {cycle}: {step}",
                    tool_or_dataset(tool)
                )));
                bar.enable_steady_tick(Duration::from_millis(200));
                self.spinner = Some(bar);
            }
            Event::DatasetProgress {
                phase,
                bytes_done,
                bytes_total,
            } => {
                let bar = self.bytes.get_or_insert_with(|| {
                    let b = self.multi.add(ProgressBar::new(*bytes_total));
                    b.set_style(
                        ProgressStyle::with_template(
                            "  {msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                    b.set_message(if *phase == Step::CHANGE {
                        "changing"
                    } else {
                        "writing"
                    });
                    b
                });
                bar.set_length(*bytes_total);
                bar.set_position(*bytes_done);
            }
            other => {
                if matches!(
                    other,
                    Event::StepFinished { .. } | Event::RunFinished { .. }
                ) {
                    self.clear();
                }
                if let Some(line) = plain_line(other) {
                    let _ = self.multi.println(bar_line(&line));
                }
            }
        }
    }

    fn note(&mut self, message: &str) {
        let _ = self.multi.println(bar_text(message));
    }

    fn finish(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_evidence::VerifyOutcome;

    #[test]
    fn step_line_shows_figures_and_failures() {
        let mut r = StepRecord {
            wall_secs: 14.04,
            user_secs: 20.0,
            sys_secs: 3.0,
            max_rss_kib: 195 * 1024,
            ok: true,
            timed: true,
            cache_dropped: true,
            verify: Some(VerifyOutcome {
                passed: true,
                ..VerifyOutcome::default()
            }),
            ..StepRecord::blank("r", "restic", 2, Step::RESTORE, 0)
        };
        let line = step_line(&r);
        assert!(line.contains("14.0 s"), "{line}");
        assert!(line.contains("peak 195 MiB"), "{line}");
        assert!(line.contains("restore verified"), "{line}");
        assert!(!line.contains("older"), "{line}");
        // A restore over an older tree says what the tool left of it.
        let mut over = r.clone();
        over.verify = Some(VerifyOutcome {
            passed: true,
            extra: 3,
            older_files: Some(labrun_evidence::OlderFiles::Kept),
            ..VerifyOutcome::default()
        });
        let line = step_line(&over);
        assert!(line.contains("verified, kept 3 older file(s)"), "{line}");
        over.verify = Some(VerifyOutcome {
            passed: true,
            older_files: Some(labrun_evidence::OlderFiles::Removed),
            ..VerifyOutcome::default()
        });
        assert!(step_line(&over).contains("older files removed"), "{line}");
        r.tree = Some(labrun_evidence::TreeMeters {
            resident_peak_bytes: Some(230 << 20),
            leftovers: vec!["gpg-agent (pid 77)".into()],
            ..Default::default()
        });
        let line = step_line(&r);
        assert!(line.contains("peak 195 MiB (tree 230 MiB)"), "{line}");
        assert!(
            line.contains("left running, killed: gpg-agent (pid 77)"),
            "{line}"
        );
        r.tree = None;
        r.ok = false;
        r.error = Some("exit 1".into());
        assert!(step_line(&r).contains("FAILED: exit 1"));

        // The guest's words stay on the line, escaped.
        r.tool = "res\x1b[2Jtic".into();
        r.error = Some("boom\r\nok: every step passed\x07".into());
        let line = step_line(&r);
        assert!(
            line.starts_with(r"res\x1b[2Jtic")
                && line.contains(r"FAILED: boom\r\nok: every step passed\x07"),
            "{line}"
        );
    }

    #[test]
    fn event_text_from_the_guest_is_escaped_on_one_line() {
        let hostile = "a\x1b]0;title\x07\n\r\u{202e}b";
        let events = [
            Event::RunStarted {
                run_id: hostile.into(),
                tools: vec![hostile.into()],
                cycles: 1,
            },
            Event::StepStarted {
                tool: hostile.into(),
                cycle: 1,
                step: Step::INIT,
            },
            Event::CycleFinished {
                tool: hostile.into(),
                cycle: 1,
                ok: true,
            },
            Event::Warning {
                message: hostile.into(),
            },
            Event::RunFinished {
                ok: false,
                stopped_because: Some(hostile.into()),
            },
        ];
        for e in &events {
            let line = plain_line(e).expect("a line");
            assert!(
                !line.chars().any(labrun_evidence::printable::is_hazard),
                "{line:?}"
            );
            assert!(line.contains(r"a\x1b]0;title\x07\n\r\u{202e}b"), "{line}");
        }
    }
}
