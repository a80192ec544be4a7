//! `GET /`, `/page.js`, `/page.css`: the search page (API.md, "Service"),
//! plain HTML, CSS and JavaScript embedded in the binary at build time
//! (`src/http/page/`). It calls only this server's own JSON routes, so it
//! needs no key of its own: it asks the person for one when those answer
//! 401, and keeps it in the browser tab.

use warp::Reply;
use warp::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use warp::http::{HeaderMap, HeaderValue, StatusCode};
use warp::reply::Response;

use super::Answer;

/// One embedded file of the page.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// Its content type.
    pub content_type: &'static str,
    /// Its bytes.
    pub body: &'static str,
}

/// The page.
pub const INDEX: Asset =
    Asset { content_type: "text/html; charset=utf-8", body: include_str!("../page/index.html") };
/// Its script.
pub const SCRIPT: Asset =
    Asset { content_type: "text/javascript; charset=utf-8", body: include_str!("../page/page.js") };
/// Its style sheet.
pub const STYLE: Asset =
    Asset { content_type: "text/css; charset=utf-8", body: include_str!("../page/page.css") };

/// What the page may load and call: this server only, no inline script, no
/// frames (the mail it shows is put in as text, never as HTML).
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                      img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `asset` with its type, the content security policy and an `ETag` of
/// the build (a browser revalidates it: 304 when it has this build's).
pub(crate) fn serve(asset: Asset, headers: &HeaderMap) -> Answer {
    let hash = blake3::hash(asset.body.as_bytes()).to_hex();
    let etag = format!("\"{}\"", &hash[..16]);
    let fresh = headers
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut response = if fresh {
        let mut r = Response::new(Vec::new().into());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        warp::reply::with_header(asset.body, CONTENT_TYPE, asset.content_type).into_response()
    };
    let h = response.headers_mut();
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        h.insert(ETAG, value);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_its_own_files_and_names_its_test_hooks() {
        for src in ["/page.js", "/page.css"] {
            assert!(INDEX.body.contains(src), "{src}");
        }
        assert!(!INDEX.body.contains("http://") && !INDEX.body.contains("https://"));
        assert!(!SCRIPT.body.contains("http://") && !SCRIPT.body.contains("https://"));
        assert!(!SCRIPT.body.contains("innerHTML"), "mail text is put in as text");
        for hook in ["search-input", "total", "next-page", "document"] {
            assert!(INDEX.body.contains(&format!("data-testid=\"{hook}\"")), "{hook}");
        }
        for hook in ["hit", "facet-value"] {
            assert!(SCRIPT.body.contains(&format!("testid = \"{hook}\"")), "{hook}");
        }
    }

    #[test]
    fn an_unchanged_page_is_not_sent_again() {
        let first = serve(INDEX, &HeaderMap::new()).unwrap();
        assert_eq!(first.status(), StatusCode::OK);
        let etag = first.headers()[ETAG].clone();
        let mut headers = HeaderMap::new();
        headers.insert(IF_NONE_MATCH, etag.clone());
        assert_eq!(serve(INDEX, &headers).unwrap().status(), StatusCode::NOT_MODIFIED);
        let script = serve(SCRIPT, &HeaderMap::new()).unwrap();
        assert_ne!(script.headers()[ETAG], etag, "each file its own tag");
        headers.insert(IF_NONE_MATCH, HeaderValue::from_static("\"other\""));
        assert_eq!(serve(INDEX, &headers).unwrap().status(), StatusCode::OK);
    }
}
