//! The word pairs a generation keeps (`indexer/src/pairs.rs`): how many,
//! their postings, the bytes of `_pairs` in the index's files, whether the
//! peer bench's two-word phrases are among them, and what reading them
//! back costs a writer (`PairList::of_index`, median of 21).
//!
//!     cargo run --release -p rowsearch-indexer --example pair_stats -- DATA/index/mail/gen-N

use rowsearch_indexer::pairs::{PAIRS_FIELD, PairList, text};
use tantivy::Index;

/// The peer bench's two-word phrases.
const PHRASES: [(&str, &str); 8] = [
    ("natural", "gas"),
    ("power", "plant"),
    ("conference", "call"),
    ("credit", "risk"),
    ("press", "release"),
    ("price", "cap"),
    ("gas", "storage"),
    ("board", "meeting"),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: pair_stats GENERATION_DIR")?;
    let index = Index::open_in_dir(&dir)?;
    let field = index.schema().get_field(PAIRS_FIELD).map_err(|_| "the index has no _pairs field")?;
    let searcher = index.reader()?.searcher();
    let (mut terms, mut postings, mut with_at) = (0u64, 0u64, 0u64);
    for segment in searcher.segment_readers() {
        let inverted = segment.inverted_index(field)?;
        let mut stream = inverted.terms().stream()?;
        while stream.advance() {
            terms += 1;
            postings += u64::from(stream.value().doc_freq);
            let key = String::from_utf8_lossy(stream.key());
            if key.contains('@') {
                with_at += 1;
            }
            if std::env::var_os("PAIRS_LIST").is_some() {
                println!("{}\t{}", key.replace('\0', " "), stream.value().doc_freq);
            }
        }
    }
    println!("pairs holding an address: {with_at}");
    let mut all_postings = 0u64;
    let all = index.schema().get_field("_all")?;
    for segment in searcher.segment_readers() {
        let inverted = segment.inverted_index(all)?;
        let mut stream = inverted.terms().stream()?;
        while stream.advance() {
            all_postings += u64::from(stream.value().doc_freq);
        }
    }
    println!("_all postings {all_postings}");
    let usage = searcher.space_usage()?;
    let mut bytes = 0u64;
    for segment in usage.segments() {
        for part in [segment.termdict(), segment.postings(), segment.positions()] {
            for f in part.fields().filter(|f| f.field_name() == PAIRS_FIELD) {
                bytes += f.total().get_bytes();
            }
        }
    }
    println!("pairs {terms}, postings {postings}, bytes {bytes} ({:.2} MB)", bytes as f64 / 1e6);
    let list = PairList::of_index(&index)?;
    for (a, b) in PHRASES {
        println!("\"{a} {b}\": {}", if list.texts().contains(&text(a, b)) { "kept" } else { "not kept" });
    }
    let of_index = median_ms(|| {
        let _ = PairList::of_index(&index);
    });
    println!("PairList::of_index: {of_index:.2} ms (median of 21)");
    let texts: Vec<String> = list.texts().to_vec();
    let new = median_ms(|| {
        let _ = PairList::new(texts.clone());
    });
    println!("PairList::new alone: {new:.2} ms (median of 21)");
    Ok(())
}

/// The median of 21 runs of `f`, in milliseconds.
fn median_ms(mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..21)
        .map(|_| {
            let started = std::time::Instant::now();
            f();
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[10]
}
