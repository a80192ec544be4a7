//! The search page (`GET /`) driven in headless Chromium through WebDriver
//! (Debian's `chromium` and `chromium-driver`, which `.ci/run` installs),
//! against the real binary serving the fixture mail, as a person uses it:
//! typing without Enter, paging, facets, the document view, a bad query,
//! suggestions by keyboard, an access key; no console errors. Every
//! figure the page shows is compared with what the HTTP API answers for
//! the same request. Screenshots go to `target/browser/` (test artifacts).
//!
//! Without chromedriver the tests say so and pass, except under CI
//! (`CI` set), where a missing browser is a failure.
//! `browser_timings_on_a_store` (ignored) is the page's benchmark: first
//! render and results after the last key, on any store
//! (`ROWSEARCH_BROWSER_BENCH_DATA`, e.g. the full corpus; see
//! search-api/BENCHMARKS.md).

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use std::collections::BTreeSet;

use rowsearch_tests::{Server, TestDir, stderr};
use serde_json::{Value, json};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
/// How long the page may take to show what a test waits for.
const PATIENCE: Duration = Duration::from_secs(30);

/// chromedriver on a port of its own, killed when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// chromedriver, or `None` (after saying why) where the machine has none
/// and this is not CI.
fn driver() -> Option<Driver> {
    let path = std::env::var("ROWSEARCH_CHROMEDRIVER").unwrap_or_else(|_| CHROMEDRIVER.to_owned());
    if !std::path::Path::new(&path).is_file() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{path} is missing: apt-get install chromium chromium-driver (.ci/run does)"
        );
        eprintln!("SKIPPED: no {path} (apt-get install chromium chromium-driver to run the browser tests)");
        return None;
    }
    // A free port, then chromedriver on it; it says when it listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(&path)
        .arg(format!("--port={port}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {path}: {e}"));
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("started successfully") {
        line.clear();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.kill();
            panic!("chromedriver exited before it listened");
        }
    }
    // Keep reading its stdout so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in out.lines() {});
    Some(Driver { child, url: format!("http://127.0.0.1:{port}") })
}

/// A headless Chromium session (its console logged for the checks).
async fn browser(driver: &Driver, profile: &std::path::Path) -> Client {
    let chrome = json!({
        "binary": std::env::var("ROWSEARCH_CHROMIUM").unwrap_or_else(|_| CHROMIUM.to_owned()),
        "args": [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--window-size=1280,1000", format!("--user-data-dir={}", profile.display()),
        ],
    });
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), chrome);
    caps.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a WebDriver session")
}

/// chromedriver's browser log since the last call (`POST /se/log`).
#[derive(Debug)]
struct BrowserLog;

impl fantoccini::wd::WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }
    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(json!({"type": "browser"}).to_string()))
    }
}

/// The console's entries since the last call.
async fn console(c: &Client) -> Vec<Value> {
    match c.issue_cmd(BrowserLog).await.expect("browser log") {
        Value::Array(entries) => entries,
        other => panic!("browser log: {other}"),
    }
}

/// Where screenshots go.
fn artifacts() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn screenshot(c: &Client, name: &str) {
    let png = c.screenshot().await.expect("screenshot");
    std::fs::write(artifacts().join(format!("{name}.png")), png).unwrap();
}

/// Polls `probe` until it gives `Some`, at most [`PATIENCE`]; what it
/// waited for is in the panic otherwise.
async fn until<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(started.elapsed() < PATIENCE, "waited {PATIENCE:?} for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs a page script; its result.
async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap_or_else(|e| panic!("{script}: {e}"))
}

/// How many answers (hits or errors) the page has shown.
async fn answers(c: &Client) -> u64 {
    js(c, "return Number(document.body.dataset.answers || 0)").await.as_u64().unwrap()
}

/// Waits for an answer after the `before`-th.
async fn next_answer(c: &Client, before: u64) {
    until("the page's next answer", || async { (answers(c).await > before).then_some(()) }).await;
}

async fn by_id(c: &Client, testid: &str) -> Element {
    c.find(Locator::Css(&format!("[data-testid=\"{testid}\"]")))
        .await
        .unwrap_or_else(|e| panic!("{testid}: {e}"))
}

/// The total the page shows.
async fn total(c: &Client) -> u64 {
    let text = by_id(c, "total").await.text().await.unwrap();
    text.trim().parse().unwrap_or_else(|_| panic!("total {text:?}"))
}

/// The subjects of the hits shown, as text (without a conversation's count).
async fn hit_subjects(c: &Client) -> Vec<String> {
    let subjects = js(
        c,
        "return [...document.querySelectorAll('[data-testid=hit] .subject')].map(e => [...e.childNodes]
            .filter(n => !(n.classList && n.classList.contains('badge'))).map(n => n.textContent).join(''))",
    )
    .await;
    serde_json::from_value(subjects).unwrap()
}

/// What the API answers for a search.
fn api(s: &Server, query: &str, extra: &str) -> Value {
    let path = format!("/tables/mail/search?q={}&highlight=true{extra}", enc(query));
    let (status, body) = s.get_json(&path);
    assert_eq!(status, 200, "{path}: {body}");
    body
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// The subjects the page shows for API hits (highlighted or plain).
fn subjects_of(answer: &Value) -> Vec<String> {
    answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| match h["highlights"]["subject"].as_str() {
            Some(marked) => marked.replace("<em>", "").replace("</em>", ""),
            None => h["document"]["subject"].as_str().unwrap_or("(no subject)").to_owned(),
        })
        .collect()
}

/// The fixture mail, ingested and indexed.
fn indexed_fixture() -> TestDir {
    let t = TestDir::new();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/mail/maildir");
    let out = t.run(&["ingest", fixture]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = t.run(&["reindex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    t
}

/// Types `text` into the search box (cleared first) without Enter, and
/// waits for the page's answer to it.
async fn type_query(c: &Client, text: &str) {
    let input = by_id(c, "search-input").await;
    input.clear().await.unwrap();
    let before = answers(c).await;
    input.send_keys(text).await.unwrap();
    next_answer(c, before).await;
    // Answers to earlier keystrokes may come first: wait for this one's.
    until(&format!("the answer to {text:?}"), || async {
        let shown = js(c, "return document.body.dataset.answeredFor || ''").await;
        (shown.as_str() == Some(text)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn browser_search_page_as_a_person_uses_it() {
    let Some(driver) = driver() else { return };
    let t = indexed_fixture();
    let s = t.serve(&["serve"]);
    a_person_uses_it(&driver, &s).await;
}

/// The same page, unchanged, over tables in HBase (`serve --hbase`;
/// rowsearch's own Thrift2 gateway stands in for HBase here): the same
/// steps, each checked against that server's API.
#[tokio::test(flavor = "current_thread")]
async fn browser_search_page_over_hbase() {
    let Some(driver) = driver() else { return };
    let (_gateway_dir, _gateway, thrift2) = crate::thrift::thrift2_server();
    let t = TestDir::new();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/mail/maildir");
    let out = t.run(&["--hbase", &thrift2, "ingest", fixture]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = t.run(&["--hbase", &thrift2, "reindex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = t.serve(&["--hbase", &thrift2, "serve"]);
    a_person_uses_it(&driver, &s).await;
}

/// What a person does on the page of server `s` holding the fixture mail in
/// table `mail`, each step checked against the server's own API.
async fn a_person_uses_it(driver: &Driver, s: &Server) {
    let profile = tempfile::tempdir().unwrap();
    let c = browser(driver, profile.path()).await;
    c.goto(&format!("http://{}/", s.addr)).await.unwrap();
    until("the table picker to offer mail", || async {
        let value = js(&c, "return document.getElementById('table').value").await;
        (value.as_str() == Some("mail")).then_some(())
    })
    .await;
    // The conversations switch shows where the table keeps threads (the
    // mail table, embedded or in HBase); this person reads messages
    // one by one, so turns it off (conversations have a test of their own).
    let (_, tables) = s.get_json("/tables");
    let threads = tables["tables"].as_array().unwrap().iter().find(|t| t["name"] == "mail").unwrap()["search"]
        ["threads"]
        .clone();
    let switch_shown =
        !js(&c, "return document.getElementById('conversations-label').hidden").await.as_bool().unwrap();
    assert_eq!(switch_shown, !threads.is_null(), "the switch shows where threads are kept: {threads}");
    if switch_shown {
        by_id(&c, "conversations").await.click().await.unwrap();
    }

    // Typed, no Enter: the API's total and its hits, highlighted.
    let query = "enron meeting";
    type_query(&c, query).await;
    let expected = api(s, query, "&limit=10");
    assert_eq!(total(&c).await, expected["total"].as_u64().unwrap());
    assert_eq!(hit_subjects(&c).await, subjects_of(&expected));
    let marks = js(&c, "return [...document.querySelectorAll('[data-testid=hit] mark')].map(m => m.textContent.toLowerCase())").await;
    let marks: Vec<String> = serde_json::from_value(marks).unwrap();
    assert!(!marks.is_empty(), "highlighted words");
    assert!(marks.iter().all(|m| m == "enron" || m == "meeting"), "{marks:?}");
    screenshot(&c, "1-typed").await;

    // The next page: the API's second page.
    let before = answers(&c).await;
    by_id(&c, "next-page").await.click().await.unwrap();
    next_answer(&c, before).await;
    let second = api(s, query, "&limit=10&offset=10");
    assert_eq!(hit_subjects(&c).await, subjects_of(&second));
    assert!(by_id(&c, "page").await.text().await.unwrap().starts_with("page 2 of"));

    // A facet value narrows the total to its count: the mailbox, then a
    // sender within it, then a month.
    for facet in ["user", "from", "month"] {
        let button = c
            .find(Locator::Css(&format!("[data-facet=\"{facet}\"] [data-testid=\"facet-value\"]")))
            .await
            .unwrap_or_else(|e| panic!("a {facet} facet value: {e}"));
        let label = button.text().await.unwrap();
        let count: u64 = label.rsplit(char::is_whitespace).next().unwrap().parse().unwrap();
        let before = answers(&c).await;
        button.click().await.unwrap();
        next_answer(&c, before).await;
        assert_eq!(total(&c).await, count, "{facet} value {label:?}");
        let pressed =
            c.find(Locator::Css(&format!("[data-facet=\"{facet}\"] [aria-pressed=\"true\"]"))).await.unwrap();
        assert_eq!(pressed.text().await.unwrap(), label);
    }
    let chips = c.find_all(Locator::Css("[data-testid=selected-facet]")).await.unwrap();
    assert_eq!(chips.len(), 3, "the selection is shown");
    screenshot(&c, "2-facets").await;
    // Removing the selections gives the whole total back.
    for _ in 0..3 {
        let before = answers(&c).await;
        by_id(&c, "selected-facet").await.click().await.unwrap();
        next_answer(&c, before).await;
    }
    assert_eq!(total(&c).await, expected["total"].as_u64().unwrap());

    // The document view, by keyboard: arrow down to the first hit, Enter;
    // its body is the API document's, as text.
    let input = by_id(&c, "search-input").await;
    input.send_keys(&Key::Down).await.unwrap();
    let focused = js(&c, "return document.activeElement.dataset.testid").await;
    assert_eq!(focused, "hit");
    c.active_element().await.unwrap().send_keys(&Key::Enter).await.unwrap();
    let document = by_id(&c, "document").await;
    until("the document view", || async { document.attr("open").await.unwrap().map(|_| ()) }).await;
    // The list's answer leaves the body out but its words around the match
    // (`crop`); the view reads the whole body from the row.
    let first = api(s, query, "&limit=1&fields=*");
    let whole = first["hits"][0]["document"]["body"].clone();
    let body = until("the whole body", || async {
        let body = js(&c, "return document.querySelector('[data-testid=document-body]').textContent").await;
        (body == whole).then_some(body)
    })
    .await;
    assert!(body.as_str().unwrap().contains('\n'), "the body's lines as text");
    screenshot(&c, "3-document").await;
    c.active_element().await.unwrap().send_keys(&Key::Escape).await.unwrap();
    until("the document view to close", || async {
        document.attr("open").await.unwrap().is_none().then_some(())
    })
    .await;

    // A query that does not parse: the API's message and where.
    type_query(&c, "gas)").await;
    let (status, error) = s.get_json("/tables/mail/search?q=gas%29");
    assert_eq!(status, 400);
    let message = by_id(&c, "query-error").await.text().await.unwrap();
    assert!(message.contains(error["error"]["message"].as_str().unwrap()), "{message}");
    let position = error["error"]["position"].as_u64().unwrap();
    assert!(message.contains(&format!("at character {}", position + 1)), "{message}");
    screenshot(&c, "4-error").await;

    // Suggestions: a word's start, arrow down, Enter: the completed word
    // is searched.
    let input = by_id(&c, "search-input").await;
    input.clear().await.unwrap();
    input.send_keys("enr").await.unwrap();
    let suggestions = until("suggestions for enr", || async {
        let items = c.find_all(Locator::Css("#suggestions li")).await.unwrap();
        (!items.is_empty()).then_some(items)
    })
    .await;
    let first_suggestion = suggestions[0].attr("data-text").await.unwrap().unwrap();
    let (_, suggested) = s.get_json("/tables/mail/suggest?q=enr&limit=6");
    assert_eq!(first_suggestion, suggested["suggestions"][0]["text"].as_str().unwrap());
    let before = answers(&c).await;
    input.send_keys(&Key::Down).await.unwrap();
    input.send_keys(&Key::Enter).await.unwrap();
    next_answer(&c, before).await;
    until("the completed query's answer", || async {
        let shown = js(&c, "return document.body.dataset.answeredFor").await;
        (shown.as_str() == Some(first_suggestion.as_str())).then_some(())
    })
    .await;
    assert_eq!(total(&c).await, api(s, &first_suggestion, "&limit=0")["total"].as_u64().unwrap());

    // A write shows at once (live search): a new message, searched.
    let (status, _) = s.request(
        "PUT",
        "/tables/mail/rows?key_fields=%7B%22user%22%3A%22cash-m%22%2C%22date%22%3A1006000000000%2C%22id%22%3A7%7D",
        Some(r#"{"cells":[{"column":"m:subject","value":"zanzibar offsite"},{"column":"b:text","value":"zanzibar"}]}"#),
    );
    assert_eq!(status, 200);
    type_query(&c, "zanzibar").await;
    assert_eq!(total(&c).await, 1);
    assert_eq!(hit_subjects(&c).await, vec!["zanzibar offsite".to_owned()]);

    // Nothing went wrong on the page: no script error, no refused
    // resource; the only failed requests are the bad query's 400s.
    for entry in console(&c).await {
        let message = entry["message"].as_str().unwrap_or_default();
        let level = entry["level"].as_str().unwrap_or_default();
        let bad_query = message.contains("status of 400");
        assert!(level != "SEVERE" || bad_query, "console: {entry}");
    }
    c.close().await.unwrap();
}

/// Conversations on the page (the default where the table keeps threads):
/// one hit per thread as `collapse=thread` answers, with its matched and
/// total messages and senders; a thread opens as the API's tree, each reply
/// drawn right of the message it answers, exactly the messages the query
/// matches within the thread marked (checked against the plain hits), a
/// message's whole body on a click; switched off, plain hits again.
#[tokio::test(flavor = "current_thread")]
async fn browser_search_page_shows_conversations() {
    let Some(driver) = driver() else { return };
    let t = TestDir::new();
    for dir in ["threads/maildir", "mail/maildir"] {
        let out = t.run(&["ingest", &format!("{}/fixtures/{dir}", env!("CARGO_MANIFEST_DIR"))]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = t.run(&["reindex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = t.serve(&["serve"]);
    conversations_on(&driver, &s).await;
}

/// The same conversations over tables in HBase (`serve --hbase`;
/// rowsearch's own Thrift2 gateway stands in for HBase here): mail ingested
/// there threads and folds as embedded, and the page shows and opens its
/// conversations, each step checked against that server's API.
#[tokio::test(flavor = "current_thread")]
async fn browser_search_page_shows_conversations_over_hbase() {
    let Some(driver) = driver() else { return };
    let (_gateway_dir, _gateway, thrift2) = crate::thrift::thrift2_server();
    let t = TestDir::new();
    for dir in ["threads/maildir", "mail/maildir"] {
        let fixture = format!("{}/fixtures/{dir}", env!("CARGO_MANIFEST_DIR"));
        let out = t.run(&["--hbase", &thrift2, "ingest", &fixture]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = t.run(&["--hbase", &thrift2, "reindex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = t.serve(&["--hbase", &thrift2, "serve"]);
    conversations_on(&driver, &s).await;
}

/// What a person does with conversations on the page of server `s`
/// holding the threads fixture and the Enron fixture in table `mail`.
async fn conversations_on(driver: &Driver, s: &Server) {
    let profile = tempfile::tempdir().unwrap();
    let c = browser(driver, profile.path()).await;
    c.goto(&format!("http://{}/", s.addr)).await.unwrap();
    until("the conversations switch", || async {
        let shown = js(&c, "return !document.getElementById('conversations-label').hidden").await;
        (shown == json!(true)).then_some(())
    })
    .await;
    assert_eq!(js(&c, "return document.getElementById('conversations').checked").await, json!(true));

    // Replies say "re" and their roots do not: threads match in part.
    let query = "re";
    type_query(&c, query).await;
    let expected = api(s, query, "&limit=10&collapse=thread");
    assert_eq!(total(&c).await, expected["total"].as_u64().unwrap());
    assert_eq!(by_id(&c, "total").await.text().await.unwrap().trim(), expected["total"].to_string());
    let label = js(&c, "return document.getElementById('total-label').textContent").await;
    assert_eq!(label, "conversations");
    assert_eq!(hit_subjects(&c).await, subjects_of(&expected));
    let shown = js(
        &c,
        "return [...document.querySelectorAll('[data-testid=hit]')].map(h => {
            const b = h.querySelector('[data-testid=thread-count]');
            return [b ? Number(b.dataset.matched) : null, b ? Number(b.dataset.messages) : null,
                    h.querySelector('.meta').textContent];
         })",
    )
    .await;
    let hits = expected["hits"].as_array().unwrap();
    let mut partial = None;
    for (n, (hit, shown)) in hits.iter().zip(shown.as_array().unwrap()).enumerate() {
        let thread = &hit["thread"];
        let (matched, messages) = (thread["matched"].as_u64().unwrap(), thread["messages"].as_u64().unwrap());
        if messages > 1 {
            assert_eq!(shown[0].as_u64(), Some(matched), "{hit}");
            assert_eq!(shown[1].as_u64(), Some(messages), "{hit}");
        } else {
            assert!(shown[0].is_null(), "a single message shows no count: {shown}");
        }
        let first = thread["participants"][0].as_str().unwrap();
        assert!(shown[2].as_str().unwrap().starts_with(first), "{shown} begins with {first}");
        if partial.is_none() && 1 < matched && matched < messages {
            partial = Some(n);
        }
    }
    let n = partial.expect("a thread the query matches in part on the first page");
    let id = hits[n]["thread"]["id"].as_str().unwrap().to_owned();
    screenshot(&c, "6-conversations").await;

    // Its thread view: the API's tree.
    let item = c.find_all(Locator::Css("[data-testid=hit]")).await.unwrap().remove(n);
    item.click().await.unwrap();
    let view = by_id(&c, "thread-view").await;
    until("the thread view", || async {
        let ready = view.attr("data-ready").await.unwrap();
        let thread = view.attr("data-thread").await.unwrap();
        (ready.as_deref() == Some("true") && thread.as_deref() == Some(id.as_str())).then_some(())
    })
    .await;
    let (status, tree) = s.get_json(&format!("/tables/mail/threads/{id}?fields=*"));
    assert_eq!(status, 200, "{tree}");
    let messages = tree["messages"].as_array().unwrap();
    let drawn = js(
        &c,
        "return [...document.querySelectorAll('[data-testid=thread-message]')].map(m =>
            [m.dataset.key, Number(m.dataset.depth), m.dataset.matched === 'true', m.getBoundingClientRect().left])",
    )
    .await;
    let drawn = drawn.as_array().unwrap();
    assert_eq!(drawn.len(), messages.len(), "every message of the thread");
    // The messages the query matches within this thread, from the plain hits.
    let matching: BTreeSet<String> = api(s, query, "&limit=1000")["hits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["document"]["thread"] == id.as_str())
        .map(|h| h["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(matching.len() as u64, hits[n]["thread"]["matched"].as_u64().unwrap());
    for (m, d) in messages.iter().zip(drawn) {
        assert_eq!(d[0], m["key"], "the API's order");
        assert_eq!(d[1], m["depth"]);
        assert_eq!(d[2].as_bool().unwrap(), matching.contains(m["key"].as_str().unwrap()), "{m}");
        if let Some(parent) = m["parent"].as_u64() {
            let left = |v: &Value| v[3].as_f64().unwrap();
            assert!(
                left(d) > left(&drawn[parent as usize]),
                "a reply right of what it answers: {d} {}",
                drawn[parent as usize]
            );
        }
    }
    assert!(messages.iter().any(|m| m["depth"].as_u64() > Some(0)), "a tree, not a list");
    let figures = by_id(&c, "thread-figures").await.text().await.unwrap();
    assert_eq!(figures, format!("{} messages, {} matching", messages.len(), matching.len()));
    screenshot(&c, "7-thread").await;

    // A message opens its whole body (the list's documents carry none).
    let last = messages.len() - 1;
    let message = c.find_all(Locator::Css("[data-testid=thread-message]")).await.unwrap().remove(last);
    message.click().await.unwrap();
    let whole = messages[last]["document"]["body"].clone();
    assert!(whole.is_string(), "{}", messages[last]);
    until("the message's body", || async {
        let body = js(&c, "const b = document.querySelectorAll('[data-testid=message-body]'); return b.length ? b[0].textContent : null").await;
        (body == whole).then_some(())
    })
    .await;
    c.active_element().await.unwrap().send_keys(&Key::Escape).await.unwrap();
    until("the thread view to close", || async { view.attr("open").await.unwrap().is_none().then_some(()) })
        .await;
    assert_eq!(js(&c, "return document.activeElement.dataset.index").await, json!(n.to_string()));

    // Switched off: the plain hits, counted as matches, and said in the URL.
    let before = answers(&c).await;
    by_id(&c, "conversations").await.click().await.unwrap();
    next_answer(&c, before).await;
    let plain = api(s, query, "&limit=10");
    assert_eq!(total(&c).await, plain["total"].as_u64().unwrap());
    assert!(plain["total"].as_u64() > expected["total"].as_u64(), "threads gather messages");
    assert_eq!(hit_subjects(&c).await, subjects_of(&plain));
    assert!(c.current_url().await.unwrap().as_str().contains("conversations=off"));
    for entry in console(&c).await {
        assert!(entry["level"] != "SEVERE", "console: {entry}");
    }
    c.close().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn browser_search_page_asks_for_a_key_and_keeps_to_its_partition() {
    let Some(driver) = driver() else { return };
    let t = indexed_fixture();
    let master = "master-key-for-the-browser-test";
    let s = t.serve(&["serve", "--master-key", master]);
    let (status, made) = {
        let (status, body) = s.raw(
            "POST",
            "/keys",
            &[("Authorization", &format!("Bearer {master}"))],
            Some(br#"{"actions":["search"],"partitions":["cash-m"]}"#),
        );
        (status, serde_json::from_slice::<Value>(&body).unwrap())
    };
    assert_eq!(status, 201, "{made}");
    let key = made["key"].as_str().unwrap();
    let profile = tempfile::tempdir().unwrap();
    let c = browser(&driver, profile.path()).await;
    c.goto(&format!("http://{}/", s.addr)).await.unwrap();
    let dialog = by_id(&c, "key-dialog").await;
    until("the page to ask for a key", || async { dialog.attr("open").await.unwrap().map(|_| ()) }).await;
    screenshot(&c, "5-key").await;
    let field = by_id(&c, "key-input").await;
    field.send_keys(key).await.unwrap();
    field.send_keys(&Key::Enter).await.unwrap();
    until("the table picker to offer mail", || async {
        let value = js(&c, "return document.getElementById('table').value").await;
        (value.as_str() == Some("mail")).then_some(())
    })
    .await;
    type_query(&c, "enron").await;
    // Conversations (the page's default), within the key's mailbox.
    let (_, confined) = s.raw(
        "GET",
        "/tables/mail/search?q=enron&limit=0&collapse=thread",
        &[("Authorization", &format!("Bearer {key}"))],
        None,
    );
    let confined: Value = serde_json::from_slice(&confined).unwrap();
    let (_, whole) = s.raw(
        "GET",
        "/tables/mail/search?q=enron&limit=0&collapse=thread",
        &[("Authorization", &format!("Bearer {master}"))],
        None,
    );
    let whole: Value = serde_json::from_slice(&whole).unwrap();
    assert_eq!(total(&c).await, confined["total"].as_u64().unwrap());
    assert!(confined["total"].as_u64() < whole["total"].as_u64(), "the key sees one mailbox");
    // The key stays in this tab's session storage, nowhere else.
    let stored =
        js(&c, "return [sessionStorage.getItem('rowsearch.key'), localStorage.length, document.cookie]")
            .await;
    assert_eq!(stored, json!([key, 0, ""]));
    for entry in console(&c).await {
        let message = entry["message"].as_str().unwrap_or_default();
        // The first /tables without a key is the 401 that asks for one.
        let asked = message.contains("status of 401");
        assert!(entry["level"] != "SEVERE" || asked, "console: {entry}");
    }
    c.close().await.unwrap();
}

/// The page's timings on a store (`ROWSEARCH_BROWSER_BENCH_DATA`, indexed;
/// `ROWSEARCH_BROWSER_BENCH_RUNS`, default 7): the first render (first
/// contentful paint and the tables loaded) of a fresh load, and results
/// after the last key (a query typed at once, from its last key event to
/// its answer on the page). Medians and the worst, printed.
#[tokio::test(flavor = "current_thread")]
#[ignore = "a benchmark: needs ROWSEARCH_BROWSER_BENCH_DATA"]
async fn browser_timings_on_a_store() {
    let data = std::env::var("ROWSEARCH_BROWSER_BENCH_DATA").expect("ROWSEARCH_BROWSER_BENCH_DATA");
    let runs: usize = std::env::var("ROWSEARCH_BROWSER_BENCH_RUNS").map_or(7, |r| r.parse().unwrap());
    let driver = driver().expect("chromedriver");
    let mut command = Command::new(rowsearch_tests::bin());
    command.args(["--data", &data, "serve", "--listen", "127.0.0.1:0"]);
    let s = Server::spawn(command);
    let profile = tempfile::tempdir().unwrap();
    let c = browser(&driver, profile.path()).await;
    let (mut paint, mut ready) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        c.goto(&format!("http://{}/", s.addr)).await.unwrap();
        let times = until("the page to load", || async {
            let t = js(
                &c,
                "const p = performance.getEntriesByName('first-contentful-paint')[0];
                 const ready = document.getElementById('table').value ? performance.now() : null;
                 return p && ready ? [p.startTime, ready] : null",
            )
            .await;
            (!t.is_null()).then_some(t)
        })
        .await;
        paint.push(times[0].as_f64().unwrap());
        ready.push(times[1].as_f64().unwrap());
    }
    let queries = ["enron", "natural gas", "meeting tomorrow", "enro*", "price", "kaminski", "power plant"];
    let mut after_key = Vec::new();
    for round in 0..runs {
        for q in queries {
            let input = by_id(&c, "search-input").await;
            input.clear().await.unwrap();
            js(&c, "window.__lastKey = 0; document.getElementById('q').oninput = () => { window.__lastKey = performance.now(); }").await;
            input.send_keys(q).await.unwrap();
            until(&format!("the answer to {q:?}"), || async {
                let shown = js(&c, "return document.body.dataset.answeredFor").await;
                (shown.as_str() == Some(q)).then_some(())
            })
            .await;
            let t = js(&c, "return Number(document.body.dataset.answeredAt) - window.__lastKey").await;
            if round > 0 {
                after_key.push(t.as_f64().unwrap());
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[v.len() - 1])
    };
    let (p, pw) = median(&mut paint);
    let (r, rw) = median(&mut ready);
    let (k, kw) = median(&mut after_key);
    println!("first contentful paint: median {p:.0} ms, worst {pw:.0} ms ({runs} loads)");
    println!("tables loaded (page usable): median {r:.0} ms, worst {rw:.0} ms");
    println!(
        "results after the last key: median {k:.0} ms, worst {kw:.0} ms ({} searches, {} ms of it the debounce)",
        after_key.len(),
        120
    );
    c.close().await.unwrap();
}
