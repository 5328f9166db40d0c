// The catalog page: a sortable, filterable table of the rows embedded in the page (works from
// file://), and for a published asset its group tree read through the JS store (modules next
// to the page, so that part needs the folder served over HTTP). Every value from the catalog is
// shown as text, never as markup.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("catalog-data").textContent);
  const COLUMNS = [
    { key: "path", label: "asset" },
    { key: "status", label: "status" },
    { key: "format", label: "format" },
    { key: "size", label: "size", num: true, bytes: true },
    { key: "datasets", label: "arrays", num: true },
    { key: "chunks", label: "chunks", num: true },
    { key: "unsupported", label: "left out", num: true },
    { key: "reference_bytes", label: "refs size", num: true, bytes: true },
    { key: "requests", label: "requests", num: true },
    { key: "reference", label: "refs" },
    { key: "error", label: "error" },
  ];
  const MAX_NODES = 5000;
  const rows = data.rows.map((r) => ({
    ...r,
    unsupported: r.unsupported ? r.unsupported.length : 0,
    unsupportedText: (r.unsupported || []).map((u) => `${u.name}: ${u.outcome} (${u.reason})`).join("\n"),
    error: r.error_class ? `${r.error_class}: ${r.error_message}` : r.error_message || "",
  }));
  let sortKey = "path";
  let sortDirection = 1;
  let filter = "";

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    Object.assign(node, props || {});
    for (const child of children) {
      if (child !== null && child !== undefined) {
        node.append(child instanceof Node ? child : document.createTextNode(String(child)));
      }
    }
    return node;
  }

  function bytes(n) {
    if (n === null || n === undefined) return "";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let value = n;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    return unit === 0 ? `${n} B` : `${value.toFixed(1)} ${units[unit]}`;
  }

  function compare(a, b) {
    const x = a[sortKey];
    const y = b[sortKey];
    if (x === y) return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
    if (x === null || x === undefined || x === "") return 1; // empty cells last either way
    if (y === null || y === undefined || y === "") return -1;
    return (x < y ? -1 : 1) * sortDirection;
  }

  function cell(row, column) {
    const value = row[column.key];
    if (column.key === "status") {
      return el("td", {}, el("span", { className: `status status-${value}` }, value));
    }
    if (column.key === "reference") {
      if (!value || !["ok", "partial"].includes(row.status)) return el("td");
      return el("td", {}, el("a", { href: value, onclick: (e) => e.stopPropagation() }, "refs"));
    }
    if (column.num) {
      const shown = value === null || value === undefined ? "" : column.bytes ? bytes(value) : value;
      const title = column.key === "unsupported" ? row.unsupportedText : (value ?? "");
      return el("td", { className: "num", title }, shown);
    }
    if (column.key === "error") {
      const text = value.length > 240 ? `${value.slice(0, 240)}…` : value;
      return el("td", { className: "error", title: value }, text);
    }
    return el("td", {}, value ?? "");
  }

  function renderHead() {
    const tr = el("tr");
    for (const column of COLUMNS) {
      const th = el("th", { scope: "col" }, column.label);
      th.dataset.key = column.key;
      if (column.key === sortKey) {
        th.setAttribute("aria-sort", sortDirection === 1 ? "ascending" : "descending");
      }
      th.addEventListener("click", () => {
        sortDirection = sortKey === column.key ? -sortDirection : 1;
        sortKey = column.key;
        render();
      });
      tr.append(th);
    }
    document.querySelector("#catalog thead").replaceChildren(tr);
  }

  function renderBody() {
    const wanted = filter.toLowerCase();
    const shown = rows
      .filter((r) => !wanted || `${r.path} ${r.status} ${r.error}`.toLowerCase().includes(wanted))
      .sort(compare);
    const body = document.querySelector("#catalog tbody");
    body.replaceChildren(
      ...shown.map((row) => {
        const tr = el("tr");
        tr.dataset.assetId = row.asset_id;
        for (const column of COLUMNS) tr.append(cell(row, column));
        if (row.reference && ["ok", "partial"].includes(row.status)) {
          tr.className = "selectable";
          tr.addEventListener("click", () => showTree(row, tr));
        }
        return tr;
      }),
    );
    document.getElementById("shown").textContent = `${shown.length} of ${rows.length} assets`;
  }

  function render() {
    renderHead();
    renderBody();
  }

  function renderCounts() {
    const counts = {};
    for (const row of rows) counts[row.status] = (counts[row.status] || 0) + 1;
    const box = document.getElementById("counts");
    box.replaceChildren(
      ...Object.keys(counts)
        .sort()
        .map((s) => el("span", { className: `status-${s}` }, `${counts[s]} ${s}`)),
    );
  }

  async function walk(zarr, store, root, path, budget) {
    const items = [];
    for (const name of store.children(path)) {
      if (budget.left <= 0) break;
      budget.left -= 1;
      const child = path ? `${path}/${name}` : name;
      const node = await zarr.open.v3(root.resolve(child));
      if (node instanceof zarr.Array) {
        items.push({ name, kind: "array", shape: node.shape, dtype: node.dtype, chunks: node.chunks });
      } else {
        items.push({ name, kind: "group", children: await walk(zarr, store, root, child, budget) });
      }
    }
    return items;
  }

  function treeList(items) {
    const ul = el("ul");
    for (const item of items) {
      const li = el("li", { className: item.kind }, el("span", { className: "name" }, item.name));
      li.dataset.name = item.name;
      if (item.kind === "array") {
        li.dataset.shape = item.shape.join(",");
        const meta = `(${item.shape.join(" × ")}) ${item.dtype}, chunks (${item.chunks.join(" × ")})`;
        li.append(el("span", { className: "meta" }, meta));
      } else {
        li.append(treeList(item.children));
      }
      ul.append(li);
    }
    return ul;
  }

  let current = 0;
  async function showTree(row, tr) {
    const ticket = ++current;
    for (const selected of document.querySelectorAll("tr.selected")) selected.classList.remove("selected");
    tr.classList.add("selected");
    const panel = document.getElementById("tree");
    const status = el("p", { className: "hint" }, "reading the references…");
    panel.replaceChildren(el("h2", {}, row.path), status);
    panel.dataset.state = "loading";
    try {
      const [zarr, shadowzarr] = await Promise.all([import("zarrita"), import("shadowzarr")]);
      const url = new URL(row.reference, document.baseURI);
      // the chunks as stored (the references'), not the grouped view's shards
      const store = await shadowzarr.ReferenceStore.fromUrl(url, { groupedView: 0 });
      const root = zarr.root(store);
      const rootNode = await zarr.open.v3(root);
      const budget = { left: MAX_NODES };
      const items =
        rootNode instanceof zarr.Array
          ? [{ name: "/", kind: "array", shape: rootNode.shape, dtype: rootNode.dtype, chunks: rootNode.chunks }]
          : await walk(zarr, store, root, "", budget);
      if (ticket !== current) return;
      const list = treeList(items);
      list.className = "tree";
      const note = budget.left <= 0 ? `the first ${MAX_NODES} nodes` : `${MAX_NODES - budget.left} nodes`;
      status.textContent = `${note}, read through the JS store from ${row.reference}`;
      panel.append(list);
      panel.dataset.state = "shown";
    } catch (error) {
      if (ticket !== current) return;
      const served = location.protocol === "file:" ? " (serve this folder over HTTP, e.g. python -m http.server, to read trees)" : "";
      status.textContent = `could not read the references: ${error.name}: ${error.message}${served}`;
      panel.dataset.state = "error";
    }
  }

  document.getElementById("filter").addEventListener("input", (e) => {
    filter = e.target.value;
    renderBody();
  });
  renderCounts();
  render();
  document.body.dataset.ready = "true";
})();
