//! Who may do what: the `Origin` check, access keys (API.md, "Access
//! keys") and what each route needs of them (`RouteSpec::action`). A
//! warp filter admits a request, or refuses it in the JSON error shape,
//! before its route reads anything else; handlers then confine what they
//! answer to the key's tables and partitions.

use std::sync::Arc;

use warp::Filter as _;

use super::error::{ApiError, Refusal};
use super::params::Rejected;
use super::route_table::ROUTES;
use super::state::State;
use crate::keys::{Access, Action, Refused};

/// Admits a request to route `name`: its `Access`, or a rejection.
pub(super) fn authed(
    state: Arc<State>,
    name: &'static str,
) -> impl warp::Filter<Extract = (Access,), Error = warp::Rejection> + Clone {
    // Looked up once, here, not per request.
    let action = ROUTES.iter().find(|r| r.name == name).map_or(Action::Master, |r| r.action);
    warp::header::optional::<String>("authorization")
        .and(warp::header::optional::<String>("origin"))
        .and(warp::header::optional::<String>("host"))
        .and(warp::path::full())
        .and_then(
            move |authorization: Option<String>,
                  origin: Option<String>,
                  host: Option<String>,
                  path: warp::path::FullPath| {
                let state = Arc::clone(&state);
                async move {
                    admit(
                        &state,
                        name,
                        action,
                        authorization.as_deref(),
                        origin.as_deref(),
                        host.as_deref(),
                        path.as_str(),
                    )
                    .map_err(|refusal| {
                        state.metrics.refused(refusal.status().1);
                        warp::reject::custom(Rejected(ApiError::from(refusal)))
                    })
                }
            },
        )
}

fn admit(
    st: &State,
    name: &str,
    action: Action,
    authorization: Option<&str>,
    origin: Option<&str>,
    host: Option<&str>,
    path: &str,
) -> Result<Access, Refusal> {
    if let Some(origin) = origin {
        let own = host.is_some_and(|h| origin.eq_ignore_ascii_case(&format!("http://{h}")));
        if !own && !st.access.allow_origins.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
            return Err(Refusal::ForeignOrigin(origin.to_owned()));
        }
    }
    let Some(checker) = &st.access.checker else { return Ok(Access::Open) };
    if action == Action::Public {
        return Ok(Access::Open);
    }
    let key = match authorization {
        None => None,
        Some(value) => match value.split_once(' ') {
            Some((scheme, key)) if scheme.eq_ignore_ascii_case("bearer") => Some(key.trim()),
            _ => return Err(Refusal::InvalidKey),
        },
    };
    let access = checker.check(st.store(), key).map_err(|refused| match refused {
        Refused::Missing => Refusal::MissingKey,
        Refused::Invalid | Refused::Expired => Refusal::InvalidKey,
    })?;
    if !access.may(action) {
        return Err(Refusal::Forbidden(format!("this key may not {} (route {name})", action.name())));
    }
    if access.partitions().is_some() && action == Action::Admin {
        return Err(Refusal::Forbidden("a key confined to partitions may not administer".into()));
    }
    if let Some(table) = table_of(path)
        && !access.may_touch(&table)
    {
        return Err(Refusal::Forbidden(format!("this key may not touch table {table:?}")));
    }
    Ok(access)
}

/// The table a path names (`/tables/{table}/...`).
fn table_of(path: &str) -> Option<String> {
    let mut segments = path.trim_start_matches('/').split('/');
    (segments.next() == Some("tables")).then_some(())?;
    let table = segments.next().filter(|t| !t.is_empty())?;
    Some(percent_encoding::percent_decode_str(table).decode_utf8_lossy().into_owned())
}
