//! How one NB row is patched into the [`LiveSnapshot`], table by table:
//! what its old version contributed to the indexes is removed, what the new
//! one contributes is added, and the owners whose derived state depends on
//! it (a switch's localnets, a router's NATs, a NAT's gateway) are marked
//! to be derived again once the batch is applied.

use super::*;

impl LiveSnapshot {
    pub(super) fn set_lsp(
        &mut self,
        uuid: Uuid,
        row: Option<&Row>,
        dirty: &mut Dirty,
        touched: &mut Touched,
        log: bool,
    ) {
        let was_present = self.present(WarningGroup::LspRow, uuid);
        let old = self.nb.lsps.remove(&uuid);
        if let Some(old) = &old {
            touched.beyond_ports |= index_lsp(&mut self.nb, old, false);
        }
        let new = self.parse(
            WarningGroup::LspRow,
            uuid,
            row,
            LogicalSwitchPort::parse,
            log,
        );
        let is_localnet =
            |p: Option<&LogicalSwitchPort>| p.is_some_and(|p| p.kind == LspType::Localnet);
        let localnet_touched = is_localnet(old.as_deref()) || is_localnet(new.as_ref());
        let new = new.map(Arc::new);
        if let Some(new) = &new {
            touched.beyond_ports |= index_lsp(&mut self.nb, new, true);
            self.nb.lsps.insert(uuid, new.clone());
        }
        touched.port(uuid, old, new);
        // The switches listing this port see it appear, vanish, or become
        // (or stop being) their localnet; a localnet that changed at all
        // must replace the row their localnet lists hold.
        if was_present != row.is_some() || localnet_touched {
            if let Some(sws) = self.switches_of_port.get(&uuid) {
                for sw in sws {
                    dirty.switches.entry(*sw).or_default().push(uuid);
                }
            }
        }
    }

    pub(super) fn set_switch(
        &mut self,
        uuid: Uuid,
        row: Option<&Row>,
        dirty: &mut Dirty,
        touched: &mut Touched,
        log: bool,
    ) {
        let old = self.nb.switches.remove(&uuid);
        if let Some(old) = &old {
            edit(
                &mut self.nb.switches_by_name,
                old.name.clone(),
                uuid,
                old,
                false,
            );
        }
        let new = self.parse(
            WarningGroup::SwitchRow,
            uuid,
            row,
            LogicalSwitch::parse,
            log,
        );
        // A switch's port list changes with every port; its name and its
        // BGPVPN annotations (the EVPN modes, the port conditions' "every
        // port" while one exists) are what the NB driver reads of it.
        touched.beyond_ports |= match (&old, &new) {
            (Some(old), Some(new)) => old.name != new.name || old.bgpvpn != new.bgpvpn,
            _ => true,
        };
        let no_ports: &[Uuid] = &[];
        let changed_ports = rerefer(
            &mut self.switches_of_port,
            uuid,
            old.as_ref().map_or(no_ports, |s| &s.ports),
            new.as_ref().map_or(no_ports, |s| &s.ports),
        );
        if let Some(new) = new {
            let new = Arc::new(new);
            edit(
                &mut self.nb.switches_by_name,
                new.name.clone(),
                uuid,
                &new,
                true,
            );
            self.nb.switches.insert(uuid, new);
        }
        // Re-derived even when no port changed: the order of `ports` may have.
        dirty
            .switches
            .entry(uuid)
            .or_default()
            .extend(changed_ports);
    }

    pub(super) fn set_router(
        &mut self,
        uuid: Uuid,
        row: Option<&Row>,
        dirty: &mut Dirty,
        log: bool,
    ) {
        let old = self.nb.routers.remove(&uuid);
        if let Some(old) = &old {
            edit(
                &mut self.nb.router_by_name,
                old.name.clone(),
                uuid,
                old,
                false,
            );
        }
        let new = self.parse(
            WarningGroup::RouterRow,
            uuid,
            row,
            LogicalRouter::parse,
            log,
        );
        let none: &[Uuid] = &[];
        rerefer(
            &mut self.routers_of_nat,
            uuid,
            old.as_ref().map_or(none, |r| &r.nat),
            new.as_ref().map_or(none, |r| &r.nat),
        );
        if let Some(new) = new {
            let new = Arc::new(new);
            edit(
                &mut self.nb.router_by_name,
                new.name.clone(),
                uuid,
                &new,
                true,
            );
            self.nb.routers.insert(uuid, new);
        }
        dirty.routers.insert(uuid);
    }

    pub(super) fn set_lrp(&mut self, uuid: Uuid, row: Option<&Row>, dirty: &mut Dirty, log: bool) {
        let old = self.nb.lrps.remove(&uuid);
        if let Some(old) = &old {
            if let Some(c) = &old.hosting_chassis {
                edit(
                    &mut self.nb.lrps_by_hosting_chassis,
                    c.clone(),
                    uuid,
                    old,
                    false,
                );
            }
        }
        let new = self.parse(
            WarningGroup::LrpRow,
            uuid,
            row,
            LogicalRouterPort::parse,
            log,
        );
        // NATs naming this LRP as gateway see it become usable or not.
        if old.is_some() != new.is_some() {
            if let Some(nats) = self.nats_of_gateway.get(&uuid) {
                dirty.nats.extend(nats);
            }
        }
        if let Some(new) = new {
            let new = Arc::new(new);
            if let Some(c) = &new.hosting_chassis {
                edit(
                    &mut self.nb.lrps_by_hosting_chassis,
                    c.clone(),
                    uuid,
                    &new,
                    true,
                );
            }
            self.nb.lrps.insert(uuid, new);
        }
    }

    pub(super) fn set_nat(&mut self, uuid: Uuid, row: Option<&Row>, dirty: &mut Dirty, log: bool) {
        let was_present = self.present(WarningGroup::NatRow, uuid);
        if let Some(gw) = self.nats_parsed.remove(&uuid).and_then(|n| n.gateway_port) {
            refer(&mut self.nats_of_gateway, gw, uuid, false);
        }
        if let Some(new) = self.parse(WarningGroup::NatRow, uuid, row, Nat::parse, log) {
            if let Some(gw) = new.gateway_port {
                refer(&mut self.nats_of_gateway, gw, uuid, true);
            }
            self.nats_parsed.insert(uuid, Arc::new(new));
        }
        dirty.nats.insert(uuid);
        if was_present != row.is_some() {
            if let Some(routers) = self.routers_of_nat.get(&uuid) {
                dirty.routers.extend(routers);
            }
        }
    }

    pub(super) fn set_lb(&mut self, uuid: Uuid, row: Option<&Row>, log: bool) {
        if let Some(old) = self.nb.lbs.remove(&uuid) {
            index_lb(&mut self.nb, &old, false);
        }
        if let Some(new) = self.parse(WarningGroup::LbRow, uuid, row, LoadBalancer::parse, log) {
            let new = Arc::new(new);
            index_lb(&mut self.nb, &new, true);
            self.nb.lbs.insert(uuid, new);
        }
    }

    /// A DHCP_Options row: no index, no cross-row state (a port naming a
    /// missing row finds none).
    pub(super) fn set_dhcp(&mut self, uuid: Uuid, row: Option<&Row>, log: bool) {
        self.nb.dhcp_options.remove(&uuid);
        if let Some(new) = self.parse(WarningGroup::DhcpRow, uuid, row, DhcpOptions::parse, log) {
            self.nb.dhcp_options.insert(uuid, Arc::new(new));
        }
    }

    /// A switch's localnets (in port order) and dangling port references.
    /// `recheck`: the ports whose standing may have changed since the last
    /// derive (all of them for a switch seen for the first time). Returns
    /// whether its localnets changed.
    pub(super) fn derive_switch(&mut self, uuid: Uuid, recheck: &[Uuid], log: bool) -> bool {
        let mut notable = self.notable_ports.remove(&uuid).unwrap_or_default();
        for port in recheck {
            let listed = self
                .switches_of_port
                .get(port)
                .is_some_and(|sws| sws.contains(&uuid));
            let is_notable = listed
                && match self.nb.lsps.get(port) {
                    Some(p) => p.kind == LspType::Localnet,
                    None => !self.partial_ports && !self.present(WarningGroup::LspRow, *port),
                };
            if is_notable {
                notable.insert(*port);
            } else {
                notable.remove(port);
            }
        }
        let mut localnets = Vec::new();
        let mut ws = Vec::new();
        if let (false, Some(sw)) = (notable.is_empty(), self.nb.switches.get(&uuid)) {
            // In the row's port order: one pass over uuids, lookups only
            // for the few notable ports.
            for port in sw.ports.iter().filter(|p| notable.contains(*p)) {
                match self.nb.lsps.get(port) {
                    Some(p) if p.kind == LspType::Localnet => localnets.push(p.clone()),
                    Some(_) => {}
                    None if self.partial_ports || self.present(WarningGroup::LspRow, *port) => {}
                    None => ws.push(RowError {
                        table: LogicalSwitch::TABLE,
                        uuid,
                        reason: format!("ports references missing row {port}"),
                    }),
                }
            }
        }
        if !notable.is_empty() {
            self.notable_ports.insert(uuid, notable);
        }
        let changed = if localnets.is_empty() {
            self.nb.localnets_of_switch.remove(&uuid).is_some()
        } else if !self
            .nb
            .localnets_of_switch
            .get(&uuid)
            .is_some_and(|old| same_rows(old, &localnets))
        {
            self.nb.localnets_of_switch.insert(uuid, localnets.into());
            true
        } else {
            false
        };
        self.set_warnings((WarningGroup::SwitchRefs, uuid), ws, log);
        changed
    }

    /// A router's dangling NAT references.
    pub(super) fn derive_router(&mut self, uuid: Uuid, log: bool) {
        let mut ws = Vec::new();
        if let Some(r) = self.nb.routers.get(&uuid).cloned() {
            for n in r.nat.iter().filter(|_| !self.partial_ports) {
                if !self.present(WarningGroup::NatRow, *n) {
                    ws.push(RowError {
                        table: LogicalRouter::TABLE,
                        uuid,
                        reason: format!("nat references missing row {n}"),
                    });
                }
            }
        }
        self.set_warnings((WarningGroup::RouterRefs, uuid), ws, log);
    }

    /// The NAT as served: its `gateway_port` dropped (with a warning) when
    /// that LRP is missing or did not parse.
    pub(super) fn derive_nat(&mut self, uuid: Uuid, log: bool) {
        if let Some(old) = self.nb.nats.remove(&uuid) {
            index_nat(&mut self.nb, &old, false);
        }
        let mut ws = Vec::new();
        if let Some(parsed) = self.nats_parsed.get(&uuid) {
            let nat = match parsed.gateway_port {
                Some(gw) if !self.nb.lrps.contains_key(&gw) => {
                    ws.push(RowError {
                        table: Nat::TABLE,
                        uuid,
                        reason: format!("gateway_port references missing or unusable row {gw}"),
                    });
                    Arc::new(Nat {
                        gateway_port: None,
                        ..(**parsed).clone()
                    })
                }
                _ => parsed.clone(),
            };
            index_nat(&mut self.nb, &nat, true);
            self.nb.nats.insert(uuid, nat);
        }
        self.set_warnings((WarningGroup::NatRefs, uuid), ws, log);
    }
}

/// Whether `a` and `b` hold the very same rows (not equal copies).
fn same_rows<T>(a: &[Arc<T>], b: &[Arc<T>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| Arc::ptr_eq(a, b))
}

/// Adds (or removes) what one LSP contributes to the LSP indexes. Returns
/// whether that touched an index beyond the ports' own (an up router
/// interface's, a localnet's network): more than a port change.
fn index_lsp(nb: &mut NbIndex, p: &Arc<LogicalSwitchPort>, add: bool) -> bool {
    let u = p.uuid;
    edit(&mut nb.lsp_by_name, p.name.clone(), u, p, add);
    match p.kind {
        _ if p.is_active_vif() => {
            // A set: a chassis listed twice binds the port once.
            for c in p.binding_candidates() {
                edit(&mut nb.active_vifs_by_chassis, c.clone(), u, p, add);
            }
            if let Some(net) = &p.network {
                edit(&mut nb.active_vifs_by_network, net.clone(), u, p, add);
            }
        }
        LspType::Router if p.up && p.device_owner.as_deref() == Some(ROUTER_INTERFACE_OWNER) => {
            if let Some(router) = &p.device_id {
                edit(&mut nb.router_ifaces_by_router, router.clone(), u, p, add);
                return true;
            }
        }
        LspType::Localnet => {
            if let Some(net) = &p.localnet_network {
                edit(&mut nb.localnets_by_physnet, net.clone(), u, p, add);
                return true;
            }
        }
        _ => {}
    }
    false
}

fn index_nat(nb: &mut NbIndex, n: &Arc<Nat>, add: bool) {
    if let Some(lp) = &n.logical_port {
        edit(&mut nb.nat_by_logical_port, lp.clone(), n.uuid, n, add);
    }
    if let (NatType::DnatAndSnat, Some(gw)) = (&n.kind, n.gateway_port) {
        edit(&mut nb.fips_by_gateway_port, gw, n.uuid, n, add);
    }
}

fn index_lb(nb: &mut NbIndex, lb: &Arc<LoadBalancer>, add: bool) {
    if lb.vip_ips.is_empty() {
        return;
    }
    for r in lb.lr_ref.iter().chain(lb.router_name.iter()) {
        edit(&mut nb.lbs_by_router, r.clone(), lb.uuid, lb, add);
    }
}
