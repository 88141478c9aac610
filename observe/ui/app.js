// Proctor's live view. It opens one Server-Sent Events stream and renders
// each state the node pushes. Every text goes through textContent: nothing
// the node reports (entry IDs, topics, errors) is ever parsed as HTML.
"use strict";

(function () {
  var MAX_MEMBERS = 40;  // members shown per group
  var MAX_ROUTEES = 64;  // routees shown per pool

  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null) continue;
        if (k === "text") e.textContent = attrs[k];
        else if (k === "cls") e.className = attrs[k];
        else e.setAttribute(k, attrs[k]);
      }
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c == null) continue;
      if (Array.isArray(c)) c.forEach(function (x) { if (x != null) e.appendChild(x); });
      else e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return e;
  }

  function badge(text, extra) {
    return el("span", { cls: "badge " + (extra || text), text: text });
  }

  // table builds a table; a header written "#name" heads a column of
  // numbers (aligned right).
  function table(headers, rows) {
    return el("table", null,
      el("thead", null, el("tr", null, headers.map(function (h) {
        var n = h.charAt(0) === "#";
        return el("th", { cls: n ? "num" : null, text: n ? h.slice(1) : h });
      }))),
      el("tbody", null, rows));
  }

  // A bar's width goes through the CSSOM: the page's Content-Security-
  // Policy refuses style attributes. The bar is a routee's high-water mark
  // against the pool's highest, its fill what is queued now; a mark of
  // zero draws nothing (it drew as a 1-pixel tick).
  function bar(highWater, queued, peak, width) {
    var b = el("span", { cls: "bar", "data-high-water": String(highWater) });
    if (!(highWater > 0) || !(peak > 0)) return b;
    b.style.width = Math.max(3, Math.round(width * highWater / peak)) + "px";
    var f = el("span", { cls: "fill" });
    f.style.width = Math.round(100 * Math.min(queued, highWater) / highWater) + "%";
    b.appendChild(f);
    return b;
  }

  // none is what an empty panel says.
  function none(text) { return el("p", { cls: "empty", text: text || "none" }); }

  function num(v) { return el("td", { cls: "num", text: String(v) }); }
  function td(text, cls) { return el("td", { cls: cls, text: text == null ? "" : String(text) }); }

  function time(t) {
    var d = new Date(t);
    if (isNaN(d)) return String(t);
    return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
  }

  function replace(id, nodes) {
    var box = document.getElementById(id);
    box.replaceChildren.apply(box, [].concat(nodes));
  }

  // --- supervision trees ---

  function treeNode(view, path) {
    var kids = (view.children || []).map(function (c) {
      var p = path + "/" + c.id;
      var restarts = el("span", { cls: "restarts" + (c.restarts > 0 ? " nonzero" : ""), "data-count": String(c.restarts), text: "restarts " + c.restarts });
      var line = el("div", { cls: "node-line" },
        el("span", { cls: "id", text: c.id }),
        el("span", { cls: "meta", text: c.process + " · " + c.restart + " · " + c.type }),
        badge(c.status),
        c.pid ? el("span", { cls: "pid", text: c.pid }) : null,
        restarts,
        c.last_exit ? el("span", { cls: "lastexit" + (c.last_exit === "normal" ? "" : " abnormal"), title: "last exit", text: "last exit: " + c.last_exit }) : null);
      var sub = null;
      if (c.tree) sub = treeNode(c.tree, p);
      else if (c.truncated) sub = el("ul", null, el("li", { cls: "more", text: "… deeper levels not shown" }));
      return el("li", { "data-path": p }, line, sub);
    });
    // The node sends a page of a large supervisor's children, with the total.
    if (view.truncated && view.children_total > kids.length) kids.push(el("li", { cls: "more", text: "… " + (view.children_total - kids.length) + " more children not shown" }));
    return el("ul", null, kids);
  }

  function renderTrees(sups) {
    if (!sups.length) return replace("trees", none("none: no supervisor is running."));
    replace("trees", sups.map(function (s) {
      var v = s.view || {};
      var head = el("div", { cls: "node-line" },
        el("span", { cls: "id", text: s.id }),
        el("span", { cls: "meta", text: s.kind + " · " + (v.strategy || "") + " · max " + v.max_restarts + " in " + v.restart_window }),
        badge(v.status || s.status),
        el("span", { cls: "pid", text: v.pid || "" }));
      return el("ul", { cls: "tree" }, el("li", { "data-path": s.id }, head, treeNode(v, s.id)));
    }));
  }

  // --- entries ---

  function renderEntries(st) {
    if (!st.entries.length) return replace("entries", none("none: the configuration declares no entry."));
    var rows = st.entries.map(function (e) {
      var mb = e.mailbox;
      return el("tr", { "data-entry": e.id },
        td(e.id), td(e.kind), el("td", { cls: "status" }, badge(e.status)),
        num(e.restarts),
        num(mb ? mb.len : ""), num(mb ? mb.high_water : ""),
        td(e.error || "", "error"));
    });
    var out = [table(["entry", "kind", "status", "#restarts", "#queued", "#high-water", "last error"], rows)];
    if (st.entries_total > st.entries.length) out.push(el("p", { cls: "more", text: (st.entries_total - st.entries.length) + " more entries not shown" }));
    replace("entries", out);
  }

  // --- pools ---

  function renderPools(pools) {
    if (!pools.length) return replace("pools", none("none: no router pool is running."));
    replace("pools", pools.map(function (p) {
      var v = p.view || {};
      var parts = [el("h3", null, p.id + " ", el("span", { cls: "meta", text: p.kind + " · " + v.strategy }))];
      if (p.kind === "router.group") {
        parts.push(el("p", { cls: "meta", text: "group " + v.group + " of " + v.scope + " · " + (v.members || []).length + " members · open scatters " + v.open_scatters }));
        return el("div", { "data-pool": p.id }, parts);
      }
      var mbs = v.mailboxes || [];
      var peak = Math.max.apply(null, mbs.map(function (m) { return m.high_water; }).concat([0]));
      parts.push(el("p", { cls: "meta", text: "size " + v.size + (v.resizer ? " · resizer " + v.resizer.type + " " + v.resizer.lower_bound + "…" + v.resizer.upper_bound + " · " + v.messages_counted + " messages counted" : "") + " · open scatters " + v.open_scatters }));
      parts.push(table(["routee", "#queued", "#high-water", ""], mbs.slice(0, MAX_ROUTEES).map(function (m) {
        return el("tr", null, el("td", { cls: "pid", text: m.pid }), num(m.len), num(m.high_water),
          el("td", null, bar(m.high_water, m.len, peak, 80)));
      })));
      if (mbs.length > MAX_ROUTEES) parts.push(el("p", { cls: "more", text: (mbs.length - MAX_ROUTEES) + " more routees" }));
      var rz = v.resizes || [];
      if (rz.length) {
        parts.push(el("h3", { text: "Recent resizes" }));
        parts.push(table(["time", "#from", "#to", "by"], rz.slice().reverse().map(function (d) {
          return el("tr", null, td(time(d.time)), num(d.from), num(d.to), td(d.by));
        })));
      } else if (v.resizer) {
        parts.push(el("p", { cls: "more", text: "The resizer has not changed the size yet." }));
      }
      return el("div", { "data-pool": p.id }, parts);
    }));
  }

  // --- http servers ---

  function renderHTTP(servers) {
    if (!servers || !servers.length) return replace("http", none("none: no HTTP server is running."));
    replace("http", servers.map(function (s) {
      var v = s.view || {};
      var parts = [el("h3", null, s.id + " ", el("span", { cls: "meta", text: v.addr + (v.tls ? " · TLS" : "") }))];
      parts.push(el("p", { cls: "meta", text: v.connections + " of " + v.max_connections + " connections · max body " + v.max_body + " bytes" }));
      parts.push(table(["route", "methods", "path", "to", "key", "timeout", "pending"], (v.routes || []).map(function (r) {
        var to = r.to || (r.to_name ? "name " + r.to_name : "");
        return el("tr", null, td(r.id), td((r.methods || []).join(", ") || "any"), td(r.path), td(to), td(r.key || ""), td(r.timeout),
          td(r.pending + " of " + r.max_pending));
      })));
      return el("div", { "data-http": s.id }, parts);
    }));
  }

  // --- pg scopes ---

  function renderScopes(scopes, nodeName) {
    if (!scopes.length) return replace("scopes", none("none: no pg scope is running."));
    replace("scopes", scopes.map(function (s) {
      var v = s.view || {};
      var groups = v.groups || [];
      var rows = groups.map(function (g) {
        var members = g.members || [];
        // The node sends only the first members of a group, with the total.
        var total = g.total != null ? g.total : members.length;
        var chips = members.slice(0, MAX_MEMBERS).map(function (pid) {
          var local = nodeName && pid.indexOf("<" + nodeName + ".") === 0;
          return el("span", { cls: "badge " + (local ? "local" : "remote"), title: local ? "local" : "remote", text: pid });
        });
        var shown = Math.min(members.length, MAX_MEMBERS);
        if (total > shown) chips.push(el("span", { cls: "more", text: "+" + (total - shown) }));
        return el("tr", { "data-group": g.name }, td(g.name), num(total), num(g.local), el("td", null, el("div", { cls: "members" }, chips)));
      });
      return el("div", { "data-scope": s.id },
        el("h3", null, s.id + " ", el("span", { cls: "meta", text: s.event_rate.toFixed(2) + " events/s · " + (v.groups_total != null ? v.groups_total : groups.length) + " groups" })),
        groups.length ? table(["group", "#members", "#local", "pids"], rows) : none("none: no group has members."),
        v.truncated ? el("p", { cls: "more", text: "The first " + groups.length + " groups by name are shown; GET /v1/pg pages through the rest." }) : null);
    }));
  }

  // --- reloads ---

  // upgradesText says how many processes a reload upgraded in place
  // (on_reload: upgrade), by result; nothing when it upgraded none.
  function upgradesText(u) {
    if (!u || !(u.ok || u.timeout || u.failed)) return "";
    return " · upgraded " + u.ok + (u.timeout ? " · upgrade timeouts " + u.timeout : "") + (u.failed ? " · upgrades failed " + u.failed : "");
  }

  function renderReloads(reloads) {
    reloads = reloads || [];
    if (!reloads.length) return replace("reloads", none("none: no reload yet."));
    replace("reloads", reloads.slice().reverse().map(function (r) {
      var line = el("div", { cls: "node-line" }, el("span", { text: time(r.time) }), badge(r.result),
        r.result === "applied" ? el("span", { cls: "meta", text: "added " + r.added + " · updated " + r.updated + " · removed " + r.removed + " · unchanged " + r.unchanged + (r.outdated ? " · outdated " + r.outdated : "") + upgradesText(r.upgrades) }) : null);
      // Errors of a rejected reload; warnings of a degraded one (new code
      // that did not start or crashed, upgrades that timed out or failed).
      var lines = (r.errors || []).concat(r.warnings || []);
      var errs = lines.length ? el("pre", { cls: "errors", text: lines.join("\n") }) : null;
      return el("div", { cls: "reload", "data-result": r.result }, line, errs);
    }));
  }

  // --- dead letters ---

  function renderDeadLetters(d) {
    if (!d) return replace("deadletters", none("none: this node keeps no dead letters."));
    var total = 0;
    var counts = Object.keys(d.total).sort().map(function (k) {
      total += d.total[k];
      return d.total[k] ? el("span", { cls: "badge", "data-reason": k, text: k + " " + d.total[k] }) : null;
    });
    document.getElementById("deadcount").textContent = String(total);
    var parts = [el("div", { cls: "members" }, counts.filter(Boolean).length ? counts : el("span", { cls: "empty", text: "none so far." }))];
    if (d.recent.length) {
      parts.push(table(["time", "reason", "to", "topic", "from"], d.recent.slice().reverse().map(function (l) {
        return el("tr", { "data-reason": l.reason }, td(time(l.time)), td(l.reason), td(l.to, "pid"), td(l.topic), td(l.from || "", "pid"));
      })));
    }
    replace("deadletters", parts);
  }

  function renderDeepest(st) {
    if (!(st.deepest_mailboxes || []).length) return replace("deepest", none("none: every mailbox is empty."));
    replace("deepest", table(["pid", "entry", "#queued", "#high-water"], st.deepest_mailboxes.map(function (m) {
      return el("tr", null, el("td", { cls: "pid", text: m.pid }), td(m.entry || ""), num(m.len), num(m.high_water));
    })));
  }

  function renderFailing(failing) {
    var names = Object.keys(failing || {}).sort();
    document.getElementById("failing-section").hidden = names.length === 0;
    replace("failing", names.length ? table(["check", "error"], names.map(function (n) {
      return el("tr", null, td(n), td(failing[n], "error"));
    })) : []);
  }

  // --- health and cluster ---

  function renderHealth(h, failing) {
    h = h || {};
    var n = Object.keys(failing || {}).length;
    var live = h.healthy ? badge("healthy", "healthy") : badge(n + " failing check" + (n === 1 ? "" : "s"), "failing");
    var nr = h.not_running || [];
    var ready = h.ready ? badge("ready", "ready") : badge("not ready: " + nr.length + " not running", "notready");
    if (!h.ready && nr.length) ready.title = nr.join(", ");
    live.dataset.check = "healthz";
    ready.dataset.check = "readyz";
    replace("health", [live, ready]);
  }

  function renderCluster(c) {
    if (!c) return replace("cluster", none("none: this node is in no cluster."));
    var parts = [el("p", { cls: "meta", text: "this node: " + c.node + " · " + c.members.length + " other member" + (c.members.length === 1 ? "" : "s") })];
    if (c.conflict) parts.push(el("pre", { cls: "errors", text: c.conflict }));
    if (!c.members.length) {
      parts.push(none("none: no other node has joined."));
      return replace("cluster", parts);
    }
    parts.push(table(["member", "state", "gossip", "transport", "link", "#queued", "breakers"], c.members.map(function (m) {
      var breakers = Object.keys(m.breakers || {}).sort().map(function (k) { return badge(k + ": " + m.breakers[k], m.breakers[k]); });
      return el("tr", { "data-member": m.name },
        td(m.name), el("td", null, badge(m.state)), td(m.gossip, "pid"), td(m.transport, "pid"),
        el("td", { title: m.last_error || null }, badge(m.connected ? "connected" : "disconnected")),
        num(m.queue_depth),
        el("td", null, el("div", { cls: "members" }, breakers.length ? breakers : el("span", { cls: "empty", text: "none" }))));
    })));
    replace("cluster", parts);
  }

  // Each section is rebuilt only when its part of the state changed, so
  // a selection or a scroll position survives unrelated updates.
  var last = {};
  function changed(key, v) {
    var s = JSON.stringify(v);
    if (last[key] === s) return false;
    last[key] = s;
    return true;
  }

  function render(st) {
    document.getElementById("node").textContent = st.node;
    document.getElementById("processes").textContent = String(st.processes);
    document.getElementById("highwater").textContent = String(st.mailbox_high_water);
    document.getElementById("entrycount").textContent = String(st.entries_total);
    if (changed("trees", st.supervisors)) renderTrees(st.supervisors);
    if (changed("entries", [st.entries, st.entries_total])) renderEntries(st);
    if (changed("pools", st.pools)) renderPools(st.pools);
    if (changed("http", st.http)) renderHTTP(st.http);
    if (changed("scopes", st.scopes)) renderScopes(st.scopes, st.node);
    if (changed("reloads", st.reloads)) renderReloads(st.reloads);
    if (changed("dead", st.dead_letters)) renderDeadLetters(st.dead_letters);
    if (changed("deepest", st.deepest_mailboxes)) renderDeepest(st);
    if (changed("failing", st.failing)) renderFailing(st.failing);
    if (changed("health", [st.health, st.failing])) renderHealth(st.health, st.failing);
    if (changed("cluster", st.cluster)) renderCluster(st.cluster);
  }

  function setConn(state, text) {
    var c = document.getElementById("conn");
    c.className = "conn " + state;
    c.dataset.state = state;
    c.textContent = text;
  }

  function connect() {
    var es = new EventSource("/ui/events");
    es.addEventListener("open", function () { setConn("live", "live"); });
    es.addEventListener("state", function (ev) {
      setConn("live", "live");
      render(JSON.parse(ev.data));
    });
    es.addEventListener("error", function () {
      // EventSource reconnects by itself (the server asks for 2s).
      setConn("down", "disconnected, retrying…");
    });
  }

  // ?once draws one state and opens no stream: a headless browser that
  // waits for the page to go quiet (chromium --screenshot with
  // --virtual-time-budget) returns, which it never does on a live stream.
  function once() {
    fetch("/ui/state", { cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error("GET /ui/state: " + r.status);
      return r.json();
    }).then(function (st) {
      render(st);
      setConn("once", "one state, not live");
    }).catch(function (e) { setConn("down", String(e)); });
  }

  if (new URLSearchParams(location.search).has("once")) once();
  else connect();
})();
