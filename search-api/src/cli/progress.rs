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
            eprintln!("{}", line(&self.label, self.unit, done, total, detail));
            self.last_line = Instant::now();
        }
    }

    /// A line of its own (above the bar on a terminal).
    pub(super) fn note(&self, text: &str) {
        if self.terminal {
            self.bar.println(format!("{}: {text}", self.label));
        } else {
            eprintln!("{}: {text}", self.label);
        }
    }

    /// Clears the bar.
    pub(super) fn finish(self) {
        self.bar.finish_and_clear();
    }
}

/// A progress line off a terminal: `reindex mail: 3211264/12138958 (26%),
/// cells` (the unit after the counts when there is one).
fn line(label: &str, unit: &str, done: u64, total: u64, detail: &str) -> String {
    let mut out = format!("{label}: {done}/{total}");
    if !unit.is_empty() {
        out.push(' ');
        out.push_str(unit);
    }
    if let Some(percent) = done.saturating_mul(100).checked_div(total) {
        out.push_str(&format!(" ({percent}%)"));
    }
    if !detail.is_empty() {
        out.push_str(", ");
        out.push_str(detail);
    }
    out
}

/// A full build's region read, as a progress line.
pub(super) fn region_line(r: &rowsearch::indexer::RegionDone) -> String {
    format!("region {} of {} read: {} keyword cells in {:.1} s", r.index + 1, r.of, r.cells, r.seconds)
}

/// Runs a reindex, reporting progress on stderr (each region read as a
/// line).
pub(super) fn reindex<'a>(
    place: impl Into<rowsearch::indexer::Place<'a>>,
    table: &str,
    options: &rowsearch::indexer::ReindexOptions,
) -> anyhow::Result<rowsearch::indexer::ReindexReport> {
    let place = place.into();
    let label = match place.tables.store() {
        Some(_) => format!("reindex {table}"),
        None => format!("reindex {table} from {}", place.tables.place()),
    };
    let mut progress = Progress::new(label, "", Duration::from_secs(2));
    let report = rowsearch::indexer::reindex(place, table, options, &mut |p| match p.region_done {
        Some(r) => progress.note(&region_line(&r)),
        None => progress.update(p.done, p.total, p.phase),
    });
    progress.finish();
    Ok(report?)
}

#[cfg(test)]
mod tests {
    use super::line;

    #[test]
    fn lines_name_the_unit_and_phase_without_stray_spaces() {
        assert_eq!(line("reindex mail", "", 3, 12, "cells"), "reindex mail: 3/12 (25%), cells");
        assert_eq!(line("ingest", "files", 5, 10, ""), "ingest: 5/10 files (50%)");
        assert_eq!(line("ingest", "files", 0, 0, "4 stored"), "ingest: 0/0 files, 4 stored");
    }
}
