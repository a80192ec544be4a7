//! The warp filters of the route table (`route_table.rs`): each route names
//! its path, method and extractors, is admitted by `auth.rs`, and hands the
//! parsed request to its handler (`handlers/`) on the work pool; warp's
//! rejections become the JSON error shape (`error.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use warp::reply::Response;
use warp::{Filter as _, Reply};

use super::auth::authed;
use super::error::{ApiError, Refusal, recover};
use super::handlers::rows::RowAt;
use super::handlers::{self, Answer};
use super::params::{Params, Rejected, body, no_params, params, params_from_json};
use super::route_table::{RouteSpec, allowed_methods, known};
use super::state::State;
use crate::keys::Access;
use rowsearch_store::{Cancel, CancelReason};
/// Runs `work` on the work pool (in arrival order) within the request time
/// limit (waiting included), and counts the request under `route`.
///
/// At the limit, a request still waiting for a worker is dropped (it never
/// runs) and answered 503 `timeout`. A write already running is waited
/// for: its answer is what it did, never a 503 for a write that was (or
/// will be) applied. A request whose client has gone (hyper drops its
/// future) is dropped from the queue too, unless it is a write.
async fn run<F>(
    state: Arc<State>,
    route: &'static str,
    access: Access,
    work: F,
) -> Result<Response, std::convert::Infallible>
where
    F: FnOnce(&State, &Access) -> Answer + Send + 'static,
{
    run_cancellable(state, route, access, move |st, access, _| work(st, access)).await
}

/// [`run`] for work that stops when its request is over: a read's
/// [`Cancel`] fires at the time limit and when its client has gone (its
/// future dropped), and the work, looking at it between segments, words
/// and rows, ends within moments instead of running on for nobody. A
/// write's never fires.
async fn run_cancellable<F>(
    state: Arc<State>,
    route: &'static str,
    access: Access,
    work: F,
) -> Result<Response, std::convert::Infallible>
where
    F: FnOnce(&State, &Access, &Cancel) -> Answer + Send + 'static,
{
    const QUEUED: u8 = 0;
    const RUNNING: u8 = 1;
    const DROPPED: u8 = 2;
    let started = Instant::now();
    let limit = state.limits.request_timeout;
    let writes = RouteSpec::mutates(route);
    let phase = Arc::new(AtomicU8::new(QUEUED));
    let cancel = if writes { Cancel::never() } else { Cancel::new(started.checked_add(limit)) };
    // The client gone: this future is dropped, and a read with it, queued
    // or running (a write keeps its place: the client may retry it).
    let _left = (!writes).then(|| Abandon { phase: Arc::clone(&phase), cancel: cancel.clone() });
    // What a route needs of the place the tables live in, checked here
    // for every route.
    if let Some(why) = RouteSpec::needs_store(route).filter(|_| state.elsewhere()) {
        let refused = ApiError::from(Refusal::NotOverHbase(route, why));
        return Ok(answer(&state, route, &access, started, Some(Ok(Err(refused)))));
    }
    if RouteSpec::needs_cluster(route) && state.cluster.is_none() {
        let refused = ApiError::not_in_a_cluster();
        return Ok(answer(&state, route, &access, started, Some(Ok(Err(refused)))));
    }
    let logged_key = access.clone();
    let worker = Arc::clone(&state);
    let worker_phase = Arc::clone(&phase);
    let task = state.work.run(move || {
        if worker_phase.compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return Err(ApiError::from(Refusal::Timeout(limit.as_millis())));
        }
        let running = Instant::now();
        let mut answer = work(&worker, &access, &cancel);
        // How long the request waited for a worker and how long it ran
        // there: a `Server-Timing` header (the search adds its own steps).
        if let Ok(response) = &mut answer {
            let ms = |from: Instant, to: Instant| to.duration_since(from).as_secs_f64() * 1e3;
            let timing =
                format!("queue;dur={:.3}, work;dur={:.3}", ms(started, running), ms(running, Instant::now()));
            if let Ok(value) = warp::http::HeaderValue::from_str(&timing) {
                response.headers_mut().append("server-timing", value);
            }
        }
        answer
    });
    let mut task = std::pin::pin!(task);
    let outcome = match tokio::time::timeout(limit, &mut task).await {
        Ok(outcome) => Some(outcome),
        Err(_) => {
            let dropped =
                phase.compare_exchange(QUEUED, DROPPED, Ordering::AcqRel, Ordering::Acquire).is_ok();
            if !dropped && writes { Some(task.await) } else { None }
        }
    };
    let response =
        answer(&state, route, &logged_key, started, outcome.map(|o| o.map_err(|failed| failed.to_string())));
    Ok(super::answers::held(response, &state.answers, state.limits.max_answers_bytes, writes).await)
}

/// A request's answer from what its work gave (`None`: the time limit
/// passed; `Err`: the work failed), counted under `route`, and marked for
/// the request log with the route and the key's uid.
fn answer(
    state: &State,
    route: &'static str,
    access: &Access,
    started: Instant,
    outcome: Option<Result<Answer, String>>,
) -> Response {
    let response = match outcome {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(error))) => error.without_path(state.store().path()).into_response(),
        Some(Err(failed)) => ApiError::from(Refusal::Internal(failed)).into_response(),
        None => ApiError::from(Refusal::Timeout(state.limits.request_timeout.as_millis())).into_response(),
    };
    state.metrics.observe(route, response.status().as_u16(), started.elapsed().as_secs_f64());
    let mut response = response;
    let key = match access {
        Access::Open => None,
        Access::Master => Some("master".to_owned()),
        Access::Key(record) => Some(record.uid.clone()),
    };
    response.extensions_mut().insert(super::request_log::Logged { route, key });
    response
}

/// Runs a service route's `work` beside the work pool (on tokio's
/// blocking threads), so `/health` and `/metrics` answer while every worker
/// is busy and the queue is long.
async fn run_beside<F>(
    state: Arc<State>,
    route: &'static str,
    access: Access,
    work: F,
) -> Result<Response, std::convert::Infallible>
where
    F: FnOnce(&State, &Access) -> Answer + Send + 'static,
{
    let started = Instant::now();
    let limit = state.limits.request_timeout;
    let worker = Arc::clone(&state);
    let logged_key = access.clone();
    let task = tokio::task::spawn_blocking(move || work(&worker, &access));
    let outcome = tokio::time::timeout(limit, task).await.ok().map(|o| o.map_err(|join| join.to_string()));
    Ok(answer(&state, route, &logged_key, started, outcome))
}

/// How often a long poll of the change feed looks for new changes: other
/// processes' writes reach the feed without telling this one.
const FEED_POLL: std::time::Duration = std::time::Duration::from_millis(20);
/// How often a long poll over HBase reads the feed again (a scan of
/// `rowsearch_feed` from the cursor).
const REMOTE_FEED_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// `GET /tables/{t}/changes`: a page of changes read on the work pool;
/// with `wait_ms`, while the page is empty, waits for the feed to move past
/// its cursor (looking at its last sequence every [`FEED_POLL`], beside
/// the pool) and reads again, until a change comes or the wait is over.
async fn changes(
    state: Arc<State>,
    access: Access,
    table: String,
    p: Params,
) -> Result<Response, std::convert::Infallible> {
    let started = Instant::now();
    let logged_key = access.clone();
    let result = long_poll(&state, access, table, p, started).await;
    let response = answer(&state, "changes", &logged_key, started, Some(Ok(result)));
    Ok(super::answers::held(response, &state.answers, state.limits.max_answers_bytes, false).await)
}

async fn long_poll(
    state: &Arc<State>,
    access: Access,
    table: String,
    p: Params,
    started: Instant,
) -> handlers::Answer {
    use handlers::changes;
    let wait = std::time::Duration::from_millis(p.number::<u64>("wait_ms")?.unwrap_or(0));
    let deadline = started + wait;
    let (access, table, p) = (Arc::new(access), Arc::new(table), Arc::new(p));
    let mut since: Option<u64> = None;
    loop {
        let (st, access, table, p) =
            (Arc::clone(state), Arc::clone(&access), Arc::clone(&table), Arc::clone(&p));
        let page = state
            .work
            .run(move || {
                let from = match since {
                    Some(from) => from,
                    None => changes::start(&st, &access, &p)?,
                };
                changes::read(&st, &access, &table, &p, from)
            })
            .await
            .map_err(|failed| ApiError::from(Refusal::Internal(failed.to_string())))??;
        if !page.changes.is_empty() || Instant::now() >= deadline {
            return Ok(warp::reply::json(&page.to_json()).into_response());
        }
        since = Some(page.cursor);
        // Wait for a sequence past the cursor, or the deadline. Over HBase
        // the feed's end is a time: the page is read again after a wait.
        let remote = state.elsewhere();
        let poll = if remote { REMOTE_FEED_POLL } else { FEED_POLL };
        loop {
            tokio::time::sleep(poll.min(deadline.saturating_duration_since(Instant::now()))).await;
            if Instant::now() >= deadline || remote {
                break;
            }
            let store = Arc::clone(state.store());
            let next = tokio::task::spawn_blocking(move || store.next_seq()).await;
            match next {
                Ok(Ok(next)) if next > page.cursor + 1 => break,
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(e.into()),
                Err(join) => return Err(Refusal::Internal(join.to_string()).into()),
            }
        }
    }
}

/// When a read's request future is dropped (its client gone, or its
/// answer given): marks its queued work dropped and cancels its running
/// work (a finished request's work has ended already).
struct Abandon {
    phase: Arc<AtomicU8>,
    cancel: Cancel,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        // QUEUED (0) -> DROPPED (2); RUNNING and DROPPED stay as they are.
        let _ = self.phase.compare_exchange(0, 2, Ordering::AcqRel, Ordering::Acquire);
        self.cancel.cancel(CancelReason::Abandoned);
    }
}

fn with_state(
    state: Arc<State>,
) -> impl warp::Filter<Extract = (Arc<State>,), Error = std::convert::Infallible> + Clone {
    warp::any().map(move || Arc::clone(&state))
}

type Body = bytes::Bytes;

/// A route group's filters, boxed.
type Routes = warp::filters::BoxedFilter<(Response,)>;

/// What every route filter is made with: the state, and the rules of
/// request bodies.
struct Ctx {
    state: Arc<State>,
    body_rules: super::params::BodyRules,
}

impl Ctx {
    /// A request of route `name` admitted (its key checked), with the state.
    fn admit(
        &self,
        name: &'static str,
    ) -> impl warp::Filter<Extract = (Access, Arc<State>), Error = warp::Rejection> + Clone + use<> {
        authed(Arc::clone(&self.state), name).and(with_state(Arc::clone(&self.state)))
    }

    /// As [`Ctx::admit`], with the query parameters route `name` declares,
    /// checked (the route table's).
    fn taking(
        &self,
        name: &'static str,
    ) -> impl warp::Filter<Extract = (Access, Arc<State>, Params), Error = warp::Rejection> + Clone + use<>
    {
        self.admit(name).and(params(known(name)))
    }

    /// As [`Ctx::admit`], for a route that declares no query parameter:
    /// any is a 400.
    fn taking_none(
        &self,
        name: &'static str,
    ) -> impl warp::Filter<Extract = (Access, Arc<State>), Error = warp::Rejection> + Clone + use<> {
        self.admit(name).and(no_params(known(name)))
    }

    /// The request's body, within the body rules.
    fn body(&self) -> impl warp::Filter<Extract = (Body,), Error = warp::Rejection> + Clone + use<> {
        body(self.body_rules.clone())
    }
}

/// What a search passed on to another searcher of a cluster takes of
/// the request (`handlers/cluster.rs`).
fn forward() -> impl warp::Filter<Extract = (handlers::cluster::Forward,), Error = warp::Rejection> + Clone {
    warp::path::full()
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and(warp::header::optional::<String>("authorization"))
        .and(warp::header::optional::<String>(crate::cluster::wire::HOP_HEADER))
        .map(|path: warp::path::FullPath, query: String, authorization, hop: Option<String>| {
            let path_and_query = if query.is_empty() {
                path.as_str().to_owned()
            } else {
                format!("{}?{query}", path.as_str())
            };
            handlers::cluster::Forward { path_and_query, authorization, passed_on: hop.is_some() }
        })
}

/// `/tables/{table}`.
fn table() -> impl warp::Filter<Extract = (String,), Error = warp::Rejection> + Clone {
    warp::path("tables").and(warp::path::param::<String>())
}

/// The service (`/health`, `/metrics`, `/openapi.json`) and the search page.
fn service_routes(c: &Ctx) -> Routes {
    use handlers::{page, service};
    let health = warp::path!("health").and(warp::get()).and(c.taking_none("health")).and_then(
        |access: Access, st: Arc<State>| run_beside(st, "health", access, move |st, _| service::health(st)),
    );
    let metrics = warp::path!("metrics")
        .and(warp::get())
        .and(c.taking_none("metrics"))
        .and_then(|access: Access, st: Arc<State>| run_beside(st, "metrics", access, service::metrics));
    let openapi = warp::path!("openapi.json").and(warp::get()).and(c.taking_none("openapi")).and_then(
        |access: Access, st: Arc<State>| run(st, "openapi", access, move |st, _| service::openapi(st)),
    );

    // The search page.
    let page_file = |name: &'static str, asset: page::Asset| {
        c.taking_none(name).and(warp::header::headers_cloned()).and_then(
            move |access: Access, st: Arc<State>, headers: warp::http::HeaderMap| {
                run(st, name, access, move |_, _| page::serve(asset, &headers))
            },
        )
    };
    let page = warp::path::end()
        .and(warp::get())
        .and(page_file("page", page::INDEX))
        .or(warp::path!("page.js").and(warp::get()).and(page_file("page_script", page::SCRIPT)))
        .unify()
        .or(warp::path!("page.css").and(warp::get()).and(page_file("page_style", page::STYLE)))
        .unify();

    let cluster = warp::path!("cluster").and(warp::get()).and(c.taking_none("cluster")).and_then(
        |access: Access, st: Arc<State>| run_beside(st, "cluster", access, |st, _| service::cluster(st)),
    );
    let shard = warp::path!("cluster" / "shard")
        .and(warp::post())
        .and(c.taking_none("cluster_shard"))
        .and(warp::header::optional::<String>(crate::cluster::wire::SECRET_HEADER))
        .and(c.body())
        .and_then(|access: Access, st: Arc<State>, secret: Option<String>, b: Body| {
            run_cancellable(st, "cluster_shard", access, move |st, _, cancel| {
                handlers::cluster::shard(st, secret.as_deref(), &b, cancel)
            })
        });
    page.or(health)
        .unify()
        .or(metrics)
        .unify()
        .or(cluster)
        .unify()
        .or(shard)
        .unify()
        .or(openapi)
        .unify()
        .boxed()
}

/// Tables.
fn table_routes(c: &Ctx) -> Routes {
    use handlers::tables;
    let list_tables = warp::path!("tables")
        .and(warp::get())
        .and(c.taking_none("tables_list"))
        .and_then(|access: Access, st: Arc<State>| run(st, "tables_list", access, tables::list));
    let put_table = table()
        .and(warp::path::end())
        .and(warp::put())
        .and(c.taking_none("tables_put"))
        .and(c.body())
        .and_then(|t: String, access: Access, st: Arc<State>, b: Body| {
            run(st, "tables_put", access, move |st, _| tables::put(st, &t, &b))
        });
    let get_table =
        table().and(warp::path::end()).and(warp::get()).and(c.taking_none("tables_get")).and_then(
            |t: String, access: Access, st: Arc<State>| {
                run(st, "tables_get", access, move |st, access| tables::get(st, access, &t))
            },
        );
    let delete_table =
        table().and(warp::path::end()).and(warp::delete()).and(c.taking_none("tables_delete")).and_then(
            |t: String, access: Access, st: Arc<State>| {
                run(st, "tables_delete", access, move |st, _| tables::delete(st, &t))
            },
        );

    let regions = table().and(warp::path!("regions")).and(warp::get()).and(c.taking("regions")).and_then(
        |t: String, access: Access, st: Arc<State>, p: Params| {
            run(st, "regions", access, move |st, access| tables::regions(st, access, &t, &p))
        },
    );

    let enable = |route: &'static str, enabled: bool| {
        table()
            .and(warp::path(if enabled { "enable" } else { "disable" }))
            .and(warp::path::end())
            .and(warp::post())
            .and(c.taking_none(route))
            .and_then(move |t: String, access: Access, st: Arc<State>| {
                run(st, route, access, move |st, _| tables::set_enabled(st, &t, enabled))
            })
    };

    let display = table()
        .and(warp::path!("display"))
        .and(warp::put())
        .and(c.taking_none("tables_display"))
        .and(c.body())
        .and_then(|t: String, access: Access, st: Arc<State>, b: Body| {
            run(st, "tables_display", access, move |st, _| tables::set_display(st, &t, &b))
        });

    list_tables
        .or(display)
        .unify()
        .or(put_table)
        .unify()
        .or(get_table)
        .unify()
        .or(delete_table)
        .unify()
        .or(regions)
        .unify()
        .or(enable("tables_disable", false))
        .unify()
        .or(enable("tables_enable", true))
        .unify()
        .boxed()
}

/// Rows: by key in the path, by `key_fields`, and `mutate`.
fn row_routes(c: &Ctx) -> Routes {
    use handlers::rows;
    let row = || table().and(warp::path("rows")).and(warp::path::param::<String>()).and(warp::path::end());
    let put_row = row().and(warp::put()).and(c.taking("rows_put")).and(c.body()).and_then(
        |t: String, key: String, access: Access, st: Arc<State>, p: Params, b: Body| {
            run(st, "rows_put", access, move |st, access| {
                rows::put(st, access, &t, &RowAt::Path(key), &p, &b)
            })
        },
    );
    let get_row = row().and(warp::get()).and(c.taking("rows_get")).and_then(
        |t: String, key: String, access: Access, st: Arc<State>, p: Params| {
            run(st, "rows_get", access, move |st, access| rows::get(st, access, &t, &RowAt::Path(key), &p))
        },
    );
    let delete_row = row().and(warp::delete()).and(c.taking("rows_delete")).and_then(
        |t: String, key: String, access: Access, st: Arc<State>, p: Params| {
            run(st, "rows_delete", access, move |st, access| {
                rows::delete(st, access, &t, &RowAt::Path(key), &p)
            })
        },
    );
    let by_fields = || table().and(warp::path("rows")).and(warp::path::end());
    let put_fields = by_fields().and(warp::put()).and(c.taking("rows_put_fields")).and(c.body()).and_then(
        |t: String, access: Access, st: Arc<State>, p: Params, b: Body| {
            run(st, "rows_put_fields", access, move |st, access| {
                rows::put(st, access, &t, &RowAt::Fields, &p, &b)
            })
        },
    );
    let get_fields = by_fields().and(warp::get()).and(c.taking("rows_get_fields")).and_then(
        |t: String, access: Access, st: Arc<State>, p: Params| {
            run(st, "rows_get_fields", access, move |st, access| {
                rows::get(st, access, &t, &RowAt::Fields, &p)
            })
        },
    );
    let delete_fields = by_fields().and(warp::delete()).and(c.taking("rows_delete_fields")).and_then(
        |t: String, access: Access, st: Arc<State>, p: Params| {
            run(st, "rows_delete_fields", access, move |st, access| {
                rows::delete(st, access, &t, &RowAt::Fields, &p)
            })
        },
    );
    let mutate =
        table().and(warp::path!("mutate")).and(warp::post()).and(c.taking("mutate")).and(c.body()).and_then(
            |t: String, access: Access, st: Arc<State>, p: Params, b: Body| {
                run(st, "mutate", access, move |st, access| rows::mutate(st, access, Some(&t), &p, b))
            },
        );
    let mutate_tables =
        warp::path!("mutate").and(warp::post()).and(c.taking("mutate_tables")).and(c.body()).and_then(
            |access: Access, st: Arc<State>, p: Params, b: Body| {
                run(st, "mutate_tables", access, move |st, access| rows::mutate(st, access, None, &p, b))
            },
        );

    put_row
        .or(get_row)
        .unify()
        .or(delete_row)
        .unify()
        .or(put_fields)
        .unify()
        .or(get_fields)
        .unify()
        .or(delete_fields)
        .unify()
        .or(mutate)
        .unify()
        .or(mutate_tables)
        .unify()
        .boxed()
}

/// Scans and counts.
fn scan_routes(c: &Ctx) -> Routes {
    use handlers::scans;
    let scan_get = table().and(warp::path!("scan")).and(warp::get()).and(c.taking("scan")).and_then(
        |t: String, access: Access, st: Arc<State>, p: Params| {
            run_cancellable(st, "scan", access, move |st, access, cancel| {
                scans::scan(st, access, &t, &p, false, cancel)
            })
        },
    );
    let scan_post = table()
        .and(warp::path!("scan"))
        .and(warp::post())
        .and(c.admit("scan"))
        .and(no_params(&[]))
        .and(c.body())
        .and_then(|t: String, access: Access, st: Arc<State>, b: Body| {
            run_cancellable(st, "scan", access, move |st, access, cancel| {
                scans::scan(st, access, &t, &params_from_json(&b, known("scan"))?, false, cancel)
            })
        });
    let count = table().and(warp::path!("count")).and(warp::get()).and(c.taking("count")).and_then(
        |t: String, access: Access, st: Arc<State>, p: Params| {
            run_cancellable(st, "count", access, move |st, access, cancel| {
                scans::scan(st, access, &t, &p, true, cancel)
            })
        },
    );

    scan_get.or(scan_post).unify().or(count).unify().boxed()
}

/// Secondary indexes.
fn index_routes(c: &Ctx) -> Routes {
    use handlers::indexes;
    let named_index = || table().and(warp::path("indexes")).and(warp::path::param::<String>());
    let indexes_list = table()
        .and(warp::path("indexes"))
        .and(warp::path::end())
        .and(warp::get())
        .and(c.taking_none("indexes_list"))
        .and_then(|t: String, access: Access, st: Arc<State>| {
            run(st, "indexes_list", access, move |st, access| indexes::list(st, access, &t))
        });
    let index_put = named_index()
        .and(warp::path::end())
        .and(warp::put())
        .and(c.taking_none("index_put"))
        .and(c.body())
        .and_then(|t: String, index: String, access: Access, st: Arc<State>, b: Body| {
            run(st, "index_put", access, move |st, _| indexes::put(st, &t, &index, &b))
        });
    let index_delete =
        named_index().and(warp::path::end()).and(warp::delete()).and(c.taking_none("index_delete")).and_then(
            |t: String, index: String, access: Access, st: Arc<State>| {
                run(st, "index_delete", access, move |st, _| indexes::delete(st, &t, &index))
            },
        );
    let index_rebuild = named_index()
        .and(warp::path!("rebuild"))
        .and(warp::post())
        .and(c.taking_none("index_rebuild"))
        .and_then(|t: String, index: String, access: Access, st: Arc<State>| {
            run(st, "index_rebuild", access, move |st, _| indexes::rebuild(st, &t, &index))
        });
    let index_verify = named_index()
        .and(warp::path!("verify"))
        .and(warp::get())
        .and(c.taking_none("index_verify"))
        .and_then(|t: String, index: String, access: Access, st: Arc<State>| {
            run(st, "index_verify", access, move |st, access| indexes::verify(st, access, &t, &index))
        });
    let index_lookup = table()
        .and(warp::path("indexes"))
        .and(warp::path::param::<String>())
        .and(warp::path::end())
        .and(warp::get())
        .and(c.taking("index_lookup"))
        .and_then(|t: String, index: String, access: Access, st: Arc<State>, p: Params| {
            run(st, "index_lookup", access, move |st, access| indexes::lookup(st, access, &t, &index, &p))
        });
    let intersect = table()
        .and(warp::path!("indexes:intersect"))
        .and(warp::get())
        .and(c.taking("index_intersect"))
        .and_then(|t: String, access: Access, st: Arc<State>, p: Params| {
            run(st, "index_intersect", access, move |st, access| indexes::combine(st, access, &t, &p))
        });

    intersect
        .or(indexes_list)
        .unify()
        .or(index_lookup)
        .unify()
        .or(index_put)
        .unify()
        .or(index_delete)
        .unify()
        .or(index_rebuild)
        .unify()
        .or(index_verify)
        .unify()
        .boxed()
}

/// Search, suggest, keyword lookups, reindex jobs.
fn search_routes(c: &Ctx) -> Routes {
    use handlers::{jobs, search};
    let search =
        table().and(warp::path!("search")).and(warp::get()).and(c.taking("search")).and(forward()).and_then(
            |t: String, access: Access, st: Arc<State>, p: Params, from: handlers::cluster::Forward| {
                run_cancellable(st, "search", access, move |st, access, cancel| {
                    search::search(st, access, &t, &p, cancel, &from)
                })
            },
        );
    let suggest = table()
        .and(warp::path!("suggest"))
        .and(warp::get())
        .and(c.taking("suggest"))
        .and(forward())
        .and_then(
            |t: String, access: Access, st: Arc<State>, p: Params, from: handlers::cluster::Forward| {
                run(st, "suggest", access, move |st, access| search::suggest(st, access, &t, &p, &from))
            },
        );
    let keywords = table().and(warp::path!("keywords")).and(warp::get()).and(c.taking("keywords")).and_then(
        |t: String, access: Access, st: Arc<State>, p: Params| {
            run(st, "keywords", access, move |st, access| search::keywords(st, access, &t, &p))
        },
    );
    let reindex = table().and(warp::path!("reindex")).and(warp::post()).and(c.taking("reindex")).and_then(
        |t: String, access: Access, st: Arc<State>, p: Params| {
            run(st, "reindex", access, move |st, _| jobs::reindex(st, &t, &p))
        },
    );
    let job = warp::path!("jobs" / String).and(warp::get()).and(c.taking_none("jobs")).and_then(
        |id: String, access: Access, st: Arc<State>| {
            run(st, "jobs", access, move |st, access| jobs::get(st, access, &id))
        },
    );

    let thread = table()
        .and(warp::path("threads"))
        .and(warp::path::param::<String>())
        .and(warp::path::end())
        .and(warp::get())
        .and(c.taking("threads_get"))
        .and_then(|t: String, id: String, access: Access, st: Arc<State>, p: Params| {
            run_cancellable(st, "threads_get", access, move |st, access, cancel| {
                search::thread(st, access, &t, &id, &p, cancel)
            })
        });
    search
        .or(suggest)
        .unify()
        .or(keywords)
        .unify()
        .or(thread)
        .unify()
        .or(reindex)
        .unify()
        .or(job)
        .unify()
        .boxed()
}

/// Access keys.
fn key_routes(c: &Ctx) -> Routes {
    let keys_create =
        warp::path!("keys").and(warp::post()).and(c.taking_none("keys_create")).and(c.body()).and_then(
            |access: Access, st: Arc<State>, b: Body| {
                run(st, "keys_create", access, move |st, _| handlers::keys::create(st, &b))
            },
        );
    let keys_list = warp::path!("keys").and(warp::get()).and(c.taking_none("keys_list")).and_then(
        |access: Access, st: Arc<State>| run(st, "keys_list", access, move |st, _| handlers::keys::list(st)),
    );
    let keys_delete = warp::path!("keys" / String)
        .and(warp::delete())
        .and(c.taking_none("keys_delete"))
        .and_then(|uid: String, access: Access, st: Arc<State>| {
            run(st, "keys_delete", access, move |st, _| handlers::keys::delete(st, &uid))
        });
    keys_create.or(keys_list).unify().or(keys_delete).unify().boxed()
}

/// Backups of the whole store (`serve --backup-dir`).
fn backup_routes(c: &Ctx) -> Routes {
    let create = warp::path!("backups").and(warp::post()).and(c.taking_none("backups_create")).and_then(
        |access: Access, st: Arc<State>| {
            run(st, "backups_create", access, move |st, _| handlers::jobs::backup(st))
        },
    );
    let list = warp::path!("backups").and(warp::get()).and(c.taking_none("backups_list")).and_then(
        |access: Access, st: Arc<State>| {
            run(st, "backups_list", access, move |st, _| handlers::jobs::backups(st))
        },
    );
    create.or(list).unify().boxed()
}

/// The change feed (`/tables/{t}/changes`) and its consumers.
fn feed_routes(c: &Ctx) -> Routes {
    use handlers::changes;
    let read = table()
        .and(warp::path!("changes"))
        .and(warp::get())
        .and(c.taking("changes"))
        .and_then(|t: String, access: Access, st: Arc<State>, p: Params| changes(st, access, t, p));
    let list = warp::path!("consumers")
        .and(warp::get())
        .and(c.taking_none("consumers_list"))
        .and_then(|access: Access, st: Arc<State>| run(st, "consumers_list", access, changes::list));
    let put = warp::path!("consumers" / String)
        .and(warp::put())
        .and(c.taking_none("consumers_put"))
        .and(c.body())
        .and_then(|name: String, access: Access, st: Arc<State>, b: Body| {
            run(st, "consumers_put", access, move |st, access| changes::put(st, access, &name, &b))
        });
    let get = warp::path!("consumers" / String)
        .and(warp::get())
        .and(c.taking_none("consumers_get"))
        .and_then(|name: String, access: Access, st: Arc<State>| {
            run(st, "consumers_get", access, move |st, access| changes::get(st, access, &name))
        });
    let delete = warp::path!("consumers" / String)
        .and(warp::delete())
        .and(c.taking_none("consumers_delete"))
        .and_then(|name: String, access: Access, st: Arc<State>| {
            run(st, "consumers_delete", access, move |st, access| changes::delete(st, access, &name))
        });
    read.or(list).unify().or(put).unify().or(get).unify().or(delete).unify().boxed()
}

/// All routes, with the final recovery.
pub fn routes(
    state: Arc<State>,
) -> impl warp::Filter<Extract = (Response,), Error = std::convert::Infallible> + Clone {
    let body_rules = super::params::BodyRules {
        max: state.limits.max_body_bytes,
        timeout: state.limits.body_read_timeout,
        budget: Arc::clone(&state.bodies),
        budget_bytes: state.limits.max_bodies_bytes,
    };
    let c = Ctx { state, body_rules };
    let all = service_routes(&c)
        .or(search_routes(&c))
        .unify()
        .or(table_routes(&c))
        .unify()
        .or(row_routes(&c))
        .unify()
        .or(scan_routes(&c))
        .unify()
        .or(index_routes(&c))
        .unify()
        .or(key_routes(&c))
        .unify()
        .or(backup_routes(&c))
        .unify()
        .or(feed_routes(&c))
        .unify()
        .recover(|r: warp::Rejection| async move {
            match r.find::<Rejected>() {
                Some(Rejected(e)) => Ok(e.clone().into_response()),
                None => recover(r).await,
            }
        })
        .unify();
    warp::path::full().and(warp::method()).and(all).map(
        |path: warp::path::FullPath, method: warp::http::Method, response: Response| {
            if response.status() != warp::http::StatusCode::METHOD_NOT_ALLOWED {
                return response;
            }
            let allow = allowed_methods(path.as_str());
            let refusal = Refusal::MethodNotAllowed { method: method.to_string(), allow: allow.clone() };
            let mut response = ApiError::from(refusal).into_response();
            if let Ok(value) = warp::http::HeaderValue::from_str(&allow.join(", ")) {
                response.headers_mut().insert(warp::http::header::ALLOW, value);
            }
            response
        },
    )
}
