//! The one progress reporter of long commands (ingest, reindex, index
//! builds): a bar on a terminal, a plain line every few seconds otherwise.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Reports `done` of `total` units of a job on stderr.
pub(super) struct Progress {
    bar: indicatif::ProgressBar,
    terminal: bool,
    label: String,
    unit: &'static str,
    every: Duration,
    last_line: Instant,
}

impl Progress {
    /// A reporter for job `label` counting `unit`s; off a terminal it
    /// prints a line at most every `every`.
    pub(super) fn new(label: impl Into<String>, unit: &'static str, every: Duration) -> Progress {
        let label = label.into();
        let bar = indicatif::ProgressBar::new(0);
        let template = format!("{{prefix}} {{msg}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{eta}})");
        if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(label.clone());
        Progress {
            bar,
            terminal: std::io::stderr().is_terminal(),
            label,
            unit,
            every,
            last_line: Instant::now(),
        }
    }

    /// Where the job is: `done` of `total`, and what it is doing (a phase,
    /// a count of its own; may be empty).
    pub(super) fn update(&mut self, done: u64, total: u64, detail: &str) {
        if self.terminal {
            self.bar.set_length(total);
            self.bar.set_position(done);
            self.bar.set_message(detail.to_owned());
        } else if self.last_line.elapsed() >= self.every {
            let sep = if detail.is_empty() { "" } else { ", " };
            eprintln!("{}: {done}/{total} {}{sep}{detail}", self.label, self.unit);
            self.last_line = Instant::now();
        }
    }

    /// Clears the bar.
    pub(super) fn finish(self) {
        self.bar.finish_and_clear();
    }
}
