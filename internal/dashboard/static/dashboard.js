// The dashboard's one script: the pages work without it; with it, a
// counter's page shows its counts live, over the counter's stream
// (Server-Sent Events, same origin), and a snippet is selected on focus.
"use strict";
(function () {
  var live = document.getElementById("live");
  if (live && window.EventSource) {
    var total = document.getElementById("total");
    var today = document.getElementById("today");
    var unique = document.getElementById("unique");
    var es = new EventSource(live.getAttribute("data-stream"));
    es.onopen = function () { live.hidden = false; };
    es.onerror = function () { live.hidden = true; };
    es.onmessage = function (ev) {
      var c;
      try { c = JSON.parse(ev.data); } catch (e) { return; }
      if (typeof c.total === "number") { total.textContent = String(c.total); }
      if (typeof c.today === "number") { today.textContent = String(c.today); }
      if (unique && typeof c.unique_today === "number") { unique.textContent = String(c.unique_today); }
    };
  }
  var snippets = document.querySelectorAll("input.snippet");
  for (var i = 0; i < snippets.length; i++) {
    snippets[i].addEventListener("focus", function (ev) { ev.target.select(); });
  }
})();
