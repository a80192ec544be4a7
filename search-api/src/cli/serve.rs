//! `demo` and `serve`: the HTTP server until SIGINT or SIGTERM.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use rowsearch::store::Store;

use super::args::{Args, ServeCommand, UsageError};
use super::common::{create, open};
use super::demo::demo;

/// Runs `demo` or `serve` (each writes to stdout itself).
pub(super) fn run(args: &Args, command: &ServeCommand) -> Result<ExitCode> {
    match command {
        ServeCommand::Demo { .. } if super::place::elsewhere(args).is_some() => {
            return Err(UsageError(
                "demo runs on the embedded store; over HBase: ingest --hbase, then serve --hbase".into(),
            )
            .into());
        }
        ServeCommand::Demo { rows, listen, no_serve } => {
            rowsearch::http::init_log(rowsearch::http::LogFormat::Text);
            let store = {
                let stdout = std::io::stdout();
                demo(args, *rows, &mut stdout.lock())?
            };
            if !*no_serve {
                let refresh = rowsearch::indexer::RefreshOptions::default();
                let options = ServeOptions {
                    demo: true,
                    access: Default::default(),
                    refresh,
                    elsewhere: None,
                    backups: None,
                    cluster: None,
                };
                serve(store, listen, Gateways::default(), rowsearch::http::Limits::default(), options)?;
            }
        }
        ServeCommand::Serve {
            listen,
            thrift,
            thrift2,
            thrift_open_network,
            create: create_store,
            master_key,
            allow_origin,
            allow_host,
            max_body,
            timeout_ms,
            header_timeout_ms,
            body_timeout_ms,
            max_connections,
            max_connections_per_client,
            max_bodies_bytes,
            max_answers_bytes,
            max_expansions,
            max_clauses,
            max_search_limit,
            max_scan_limit,
            max_lookups,
            max_highlight_bytes,
            workers,
            idle_spin_us,
            refresh_ms,
            cluster,
            overlay_max_rows,
            backup_dir,
            backup_every,
            backup_keep,
            backup_max_mb_per_s,
            log_format,
            slow_ms,
        } => {
            rowsearch::http::init_log(match log_format {
                super::args::LogFormatArg::Text => rowsearch::http::LogFormat::Text,
                super::args::LogFormatArg::Json => rowsearch::http::LogFormat::Json,
            });
            let defaults = rowsearch::http::Limits::default();
            let limits = rowsearch::http::Limits {
                max_body_bytes: *max_body,
                request_timeout: std::time::Duration::from_millis(*timeout_ms),
                header_read_timeout: std::time::Duration::from_millis(*header_timeout_ms),
                body_read_timeout: std::time::Duration::from_millis(*body_timeout_ms),
                max_connections: usize::try_from(*max_connections).unwrap_or(usize::MAX),
                max_connections_per_client: *max_connections_per_client,
                max_bodies_bytes: *max_bodies_bytes,
                max_answers_bytes: *max_answers_bytes,
                workers: workers.map_or(defaults.workers, |w| usize::try_from(w).unwrap_or(usize::MAX)),
                idle_spin: std::time::Duration::from_micros(*idle_spin_us),
                overlay_max_rows: *overlay_max_rows,
                max_expansions: *max_expansions,
                max_clauses: *max_clauses,
                max_search_limit: *max_search_limit,
                max_scan_limit: *max_scan_limit,
                max_lookups: *max_lookups,
                max_highlight_bytes: *max_highlight_bytes,
                slow_request: std::time::Duration::from_millis(*slow_ms),
                ..defaults
            };
            if master_key.is_none() {
                refuse_open_exposure(listen)?;
            }
            let elsewhere = super::place::elsewhere(args);
            // With the tables elsewhere the local directory holds only
            // rowsearch's own (index generations, keys): made when missing.
            let store = if *create_store || elsewhere.is_some() { create(args)? } else { open(args)? };
            let checker = match master_key {
                None => None,
                Some(key) => Some(
                    rowsearch::keys::Checker::new(&store, key)
                        .map_err(|e| UsageError(format!("--master-key: {e}")))?,
                ),
            };
            if checker.is_some() {
                tracing::info!(
                    target: "rowsearch::serve",
                    "access keys are on. The server speaks plain HTTP: to expose it beyond this machine, \
                     put a reverse proxy with TLS in front (docs/http.md, \"Access keys, and exposing the server\")"
                );
            }
            let hosts = rowsearch::http::HostRule { allowed: allow_host.clone(), local: None };
            let access =
                rowsearch::http::AccessConfig { checker, allow_origins: allow_origin.clone(), hosts };
            let refresh = rowsearch::indexer::RefreshOptions {
                interval: (*refresh_ms > 0).then(|| std::time::Duration::from_millis(*refresh_ms)),
                ..Default::default()
            };
            let thrift = Gateways {
                hbase: thrift.as_deref(),
                thrift2: thrift2.as_deref(),
                open_network: *thrift_open_network,
            };
            let backups = match backup_dir {
                Some(_) if elsewhere.is_some() => {
                    return Err(UsageError(
                        "--backup-dir beside --hbase: the tables live in HBase; take its snapshots there"
                            .into(),
                    )
                    .into());
                }
                Some(dir) => {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| UsageError(format!("--backup-dir {}: {e}", dir.display())))?;
                    if dir.canonicalize()?.starts_with(store.path().canonicalize()?) {
                        return Err(UsageError(format!(
                            "--backup-dir {} lies inside --data: a backup would copy its own earlier ones",
                            dir.display()
                        ))
                        .into());
                    }
                    Some(Backups {
                        config: rowsearch::http::BackupConfig {
                            dir: dir.clone(),
                            keep: *backup_keep,
                            max_bytes_per_sec: (*backup_max_mb_per_s > 0)
                                .then(|| backup_max_mb_per_s * 1_000_000),
                        },
                        every: *backup_every,
                    })
                }
                None => None,
            };
            let cluster = match (cluster, &args.hbase) {
                (None, _) => None,
                (Some(_), None) => {
                    return Err(UsageError(
                        "--cluster needs --hbase: a cluster of searchers shares one HBase".into(),
                    )
                    .into());
                }
                (Some(name), Some(hbase)) => {
                    rowsearch::cluster::validate_name(name).map_err(UsageError)?;
                    refuse_unreachable_member(listen)?;
                    Some((name.clone(), hbase.clone()))
                }
            };
            let options = ServeOptions { demo: false, access, refresh, elsewhere, backups, cluster };
            serve(store, listen, thrift, limits, options)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--listen` as a socket address (exit 2 when it is not one).
fn listen_addr(listen: &str) -> Result<std::net::SocketAddr> {
    Ok(listen.parse().map_err(|e| UsageError(format!("--listen {listen:?}: {e}")))?)
}

/// A searcher of a cluster registers the address it listens on for the
/// others to call: an unspecified one (`0.0.0.0`, `::`) names no host
/// they could reach.
fn refuse_unreachable_member(listen: &str) -> Result<()> {
    let addr = listen_addr(listen)?;
    if addr.ip().is_unspecified() {
        return Err(UsageError(format!(
            "--cluster needs --listen on an address the other searchers can reach (this searcher registers \
             it in HBase for them to call), not {addr}: name this host's address"
        ))
        .into());
    }
    Ok(())
}

/// Without access keys, only loopback: exit 2 for any other address.
fn refuse_open_exposure(listen: &str) -> Result<()> {
    let addr = listen_addr(listen)?;
    if addr.ip().is_loopback() {
        return Ok(());
    }
    Err(UsageError(format!(
        "refusing to listen on {addr} without access keys: anyone who reaches it could read, write and \
         drop every table. Set --master-key (at least 16 bytes) or ROWSEARCH_MASTER_KEY, or listen on \
         127.0.0.1"
    ))
    .into())
}

/// The Thrift gateways to serve beside HTTP: `--thrift` (the `Hbase`
/// service) and `--thrift2` (`THBaseService`).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Gateways<'a> {
    pub hbase: Option<&'a str>,
    pub thrift2: Option<&'a str>,
    /// `--thrift-open-network`: a non-loopback address is allowed.
    pub open_network: bool,
}

/// A Thrift gateway's address: loopback only (the gateways have no
/// authentication), unless `open_network` says the operator knows.
fn thrift_address(flag: &str, listen: &str, open_network: bool) -> Result<std::net::SocketAddr> {
    let addr: std::net::SocketAddr =
        listen.parse().map_err(|e| UsageError(format!("{flag} {listen:?}: {e}")))?;
    if !addr.ip().is_loopback() {
        if !open_network {
            return Err(UsageError(format!(
                "refusing to serve Thrift on {addr}: HBase's Thrift API has no authentication, so the \
                 gateway listens on loopback only (127.0.0.1 or ::1); pass --thrift-open-network to serve \
                 it on the network anyway"
            ))
            .into());
        }
        tracing::warn!(
            target: "rowsearch::serve",
            "{flag} on {addr} has no authentication: anyone who reaches it can read, write and drop \
             every table (--thrift-open-network)"
        );
    }
    Ok(addr)
}

/// `serve --backup-dir`, `--backup-every`, `--backup-keep`.
pub(super) struct Backups {
    pub config: rowsearch::http::BackupConfig,
    /// How often the server takes one by itself.
    pub every: Option<std::time::Duration>,
}

/// How [`serve`] serves, besides its address, gateways and limits.
pub(super) struct ServeOptions {
    /// Print the demo's example requests.
    pub demo: bool,
    pub access: rowsearch::http::AccessConfig,
    pub refresh: rowsearch::indexer::RefreshOptions,
    /// Where the tables live when not in the store (HBase).
    pub elsewhere: Option<std::sync::Arc<dyn rowsearch::store::TableStore>>,
    pub backups: Option<Backups>,
    /// `--cluster NAME` with the `--hbase` it shares.
    pub cluster: Option<(String, String)>,
}

/// Serves HTTP on `listen` until SIGINT or SIGTERM. Prints the bound
/// address (and, for the demo, example requests) once it accepts.
pub(super) fn serve(
    store: Store,
    listen: &str,
    thrift: Gateways<'_>,
    limits: rowsearch::http::Limits,
    options: ServeOptions,
) -> Result<()> {
    let ServeOptions { demo, access, refresh, elsewhere, backups, cluster } = options;
    let addr: std::net::SocketAddr =
        listen.parse().map_err(|e| UsageError(format!("--listen {listen:?}: {e}")))?;
    if access.checker.is_none() {
        refuse_open_exposure(listen)?;
    }
    let gateways = [
        thrift
            .hbase
            .map(|a| thrift_address("--thrift", a, thrift.open_network))
            .transpose()?
            .map(|a| (rowsearch::thrift::Api::Hbase, a)),
        thrift
            .thrift2
            .map(|a| thrift_address("--thrift2", a, thrift.open_network))
            .transpose()?
            .map(|a| (rowsearch::thrift::Api::Thrift2, a)),
    ];
    if gateways.iter().any(Option::is_some) && access.checker.is_some() {
        return Err(UsageError(
            "--thrift or --thrift2 beside --master-key: the Thrift gateways have no authentication (HBase's \
             have none), so they would be an open door next to a locked one; serve Thrift from a server \
             without access keys, on loopback"
                .into(),
        )
        .into());
    }
    if gateways.iter().any(Option::is_some) && elsewhere.is_some() {
        return Err(UsageError(
            "--thrift or --thrift2 beside --hbase: the tables live in HBase, whose own Thrift gateway \
             serves them to HBase clients"
                .into(),
        )
        .into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| UsageError(format!("cannot listen on {addr}: {e}")))?;
        let bound = listener.local_addr()?;
        let mut thrift_listeners = Vec::new();
        for (api, addr) in gateways.into_iter().flatten() {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| UsageError(format!("cannot listen on {addr} for Thrift: {e}")))?;
            thrift_listeners.push((api, listener));
        }
        {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            writeln!(out, "listening on http://{bound}")?;
            writeln!(out, "search page: http://{bound}/")?;
            for (api, listener) in &thrift_listeners {
                let name = if *api == rowsearch::thrift::Api::Hbase { "thrift" } else { "thrift2" };
                writeln!(out, "{name} listening on {}", listener.local_addr()?)?;
            }
            if demo {
                writeln!(out, "Try:")?;
                for example in demo_requests(bound) {
                    writeln!(out, "  {example}")?;
                }
                writeln!(out, "(Ctrl-C stops the server.)")?;
            }
            out.flush()?;
        }
        let store = std::sync::Arc::new(store);
        let overlay_max_rows = limits.overlay_max_rows;
        let mut state = rowsearch::http::State::new(std::sync::Arc::clone(&store), limits)?;
        state.access = access;
        if !bound.ip().is_unspecified() {
            state.access.hosts.local = Some(bound.ip());
        }
        // Keeps every searchable table's index current, whoever writes
        // (over HBase: the tailer, reading each table's newer cells).
        let home = match elsewhere {
            Some(tables) => rowsearch::indexer::Home::new(tables, store.path().to_owned()),
            None => rowsearch::indexer::Home::from(&store),
        };
        // A searcher of a cluster indexes the shards it holds, each on its
        // own (cluster/shards.rs), and no table whole.
        let live = match &cluster {
            Some(_) => {
                let none = rowsearch::indexer::ShardSource::no_table(home.tables.clone());
                rowsearch::indexer::LiveIndexes::with_source(home.clone(), std::sync::Arc::new(none), overlay_max_rows)
            }
            None => rowsearch::indexer::LiveIndexes::new(home.clone(), overlay_max_rows),
        };
        let refresher = std::sync::Arc::new(rowsearch::indexer::Refresher::start(
            std::sync::Arc::new(live),
            refresh.clone(),
        )?);
        state.searcher = rowsearch::Searcher::with_refresher(refresher);
        if let Some((name, hbase)) = cluster {
            let member = std::sync::Arc::new(rowsearch::cluster::Cluster::new(&name, &hbase, &bound.to_string()));
            let asked = std::sync::Arc::clone(&member);
            let secret = tokio::task::spawn_blocking(move || asked.secret()).await.map_err(std::io::Error::other)??;
            let indexes =
                rowsearch::cluster::shards::ShardIndexes::new(home.tables, store.path(), refresh, overlay_max_rows);
            let peers = rowsearch::cluster::wire::Peers::new(tokio::runtime::Handle::current(), secret);
            member.attach(std::sync::Arc::new(indexes), peers);
            member.start()?;
            tracing::info!(target: "rowsearch::serve", cluster = name, id = member.id(), "joined the cluster");
            state.cluster = Some(member);
        }
        let every = backups.as_ref().and_then(|b| b.every);
        state.backups = backups.map(|b| b.config);
        let state = std::sync::Arc::new(state);
        if let Some(member) = &state.cluster {
            // Weak: the state holds the member, which must not hold it.
            let weak = std::sync::Arc::downgrade(&state);
            member.set_lag_source(Box::new(move |table| Some(weak.upgrade()?.freshness(table)?.lag_ms)));
        }
        if let Some(every) = every {
            tokio::spawn(take_backups(std::sync::Arc::clone(&state), every));
        }
        for (table, index, job) in state.resume_index_builds() {
            tracing::info!(target: "rowsearch::serve", table, index, job, "resuming the build of an index");
        }
        for (api, listener) in thrift_listeners {
            // Writes over Thrift go through the same store, so the live
            // indexes see them as they see HTTP's.
            let observed = std::sync::Arc::clone(&state);
            let observe: rowsearch::thrift::CallObserver =
                std::sync::Arc::new(move |method, outcome| observed.metrics.thrift_call(method, outcome));
            tokio::spawn(rowsearch::thrift::serve(
                listener,
                std::sync::Arc::clone(state.store()),
                api,
                observe,
            ));
        }
        let member = state.cluster.clone();
        rowsearch::http::serve(listener, state, shutdown_signal()).await;
        if let Some(member) = member {
            // Stopped on purpose: the others take its shards now rather
            // than when its leases end.
            let released = tokio::task::spawn_blocking(move || member.leave()).await;
            match released {
                Ok(Ok(n)) => tracing::info!(target: "rowsearch::serve", released = n, "left the cluster"),
                Ok(Err(e)) => tracing::warn!(target: "rowsearch::serve", error = %e, "leaving the cluster"),
                Err(e) => tracing::warn!(target: "rowsearch::serve", error = %e, "leaving the cluster"),
            }
        }
        Ok(())
    })
}

/// Starts a backup job every `every` (the first one `every` after the
/// start), as `POST /backups` does; a backup still running when the next
/// is due is left to finish and that one skipped.
async fn take_backups(state: std::sync::Arc<rowsearch::http::State>, every: std::time::Duration) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        ticks.tick().await;
        let Some(config) = state.backups.clone() else { return };
        match state.jobs.start_backup(std::sync::Arc::clone(state.store()), config) {
            Ok(job) => tracing::info!(target: "rowsearch::backup", job, "scheduled backup started"),
            Err(running) => tracing::warn!(
                target: "rowsearch::backup",
                job = running,
                "scheduled backup skipped: the last one is still being taken"
            ),
        }
    }
}

/// The example requests the demo prints (and its tests run as printed).
pub(super) fn demo_requests(addr: std::net::SocketAddr) -> [String; 3] {
    [
        format!(
            "curl -s 'http://{addr}/tables/mail/search?q=enron+meeting&user=cash-m&sort=newest&limit=3&columns=m:subject'"
        ),
        format!(
            "curl -s 'http://{addr}/tables/mail/search?q=%22natural+gas%22+price&highlight=true&limit=2&columns=m:subject,m:from'"
        ),
        format!("curl -s 'http://{addr}/tables/mail/keywords?user=cash-m&terms=enron,meeting&limit=3'"),
    ]
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    tracing::info!(target: "rowsearch::serve", "shutting down: finishing requests in flight");
}
