// fwdoctor fleet report: click a column header to sort by it (again to reverse).
// Numbers sort as numbers, versions and names naturally (node-9 before node-10),
// empty cells last. No network, no external code.
(function () {
  "use strict";
  var table = document.getElementById("matrix");
  if (!table) { return; }
  var body = table.tBodies[0];
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  function key(row, index) {
    var cell = row.cells[index];
    return cell ? (cell.getAttribute("data-v") || "") : "";
  }

  function compare(a, b, numeric) {
    if (a === "" || b === "") { return a === b ? 0 : (a === "" ? 1 : -1); }
    if (numeric) { return parseFloat(a) - parseFloat(b); }
    return collator.compare(a, b);
  }

  function sortBy(header) {
    var index = header.cellIndex;
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var numeric = header.getAttribute("data-type") === "number";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var a = key(r1, index), b = key(r2, index);
      var order = compare(a, b, numeric);
      if (a === "" || b === "") { return order; }  // empty cells stay last either way
      return ascending ? order : -order;
    });
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) { heads[i].removeAttribute("aria-sort"); }
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var fragment = document.createDocumentFragment();
    rows.forEach(function (row) { fragment.appendChild(row); });
    body.appendChild(fragment);
  }

  var headers = table.tHead.rows[0].cells;
  for (var i = 0; i < headers.length; i++) {
    headers[i].addEventListener("click", function (event) { sortBy(event.currentTarget); });
    headers[i].addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sortBy(event.currentTarget); }
    });
  }
  var only = document.getElementById("only-odd");
  if (only) {
    only.addEventListener("change", function () { table.classList.toggle("only-odd", only.checked); });
  }
  table.setAttribute("data-ready", "1");
})();
