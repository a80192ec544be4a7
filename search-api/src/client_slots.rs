//! Connections counted per client address, so one client holds at most
//! its share of a server's connections (HTTP's and the Thrift gateways').

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The open connections of each client address.
pub(crate) type Clients = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// One of a client's connections, counted while it lives.
pub(crate) struct ClientSlot {
    clients: Clients,
    ip: IpAddr,
}

impl ClientSlot {
    /// A slot for a connection from `ip`, if it has fewer than `max` open.
    pub(crate) fn take(clients: &Clients, ip: IpAddr, max: usize) -> Option<ClientSlot> {
        let mut open = clients.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(ip).or_default();
        if *n >= max.max(1) {
            return None;
        }
        *n += 1;
        Some(ClientSlot { clients: Arc::clone(clients), ip })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}
