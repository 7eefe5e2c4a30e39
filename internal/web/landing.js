(function () {
  // The live count: one EventSource on the key's stream (?live=KEY picks
  // another key). textContent, never markup.
  if (!window.EventSource) return;
  var key = 'visitors/landing', events = 0;
  var m = /[?&]live=([A-Za-z0-9._~\/-]{1,128})(&|$)/.exec(location.search);
  if (m) key = m[1];
  document.getElementById('live-key').textContent = key;
  var total = document.getElementById('live-total');
  new EventSource('/counter/' + key + '/stream').onmessage = function (e) {
    total.textContent = JSON.parse(e.data).total;
    total.dataset.events = ++events;
  };
})();
(function () {
  // Most visited: shown only when the server makes the list public.
  fetch('/top.json?days=7&limit=10').then(function (r) {
    return r.ok ? r.json() : null;
  }).then(function (l) {
    if (!l || !l.top.length) return;
    var ol = document.getElementById('top-list');
    l.top.forEach(function (e) {
      var li = document.createElement('li');
      var code = document.createElement('code');
      code.textContent = e.key;
      li.appendChild(code);
      li.appendChild(document.createTextNode(' ' + e.count + ' visits'));
      ol.appendChild(li);
    });
    document.getElementById('top').hidden = false;
  }).catch(function () {});
})();
(function () {
  var f = document.getElementById('maker');
  function val(id) { return document.getElementById(id); }
  function esc(s) { return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;'); }
  function update() {
    var key = val('key').value.trim() || 'your/key';
    var q = [];
    if (val('label').value !== 'visitors') q.push('label=' + encodeURIComponent(val('label').value));
    if (val('style').value !== 'flat') q.push('style=' + val('style').value);
    if (val('color').value && val('color').value !== 'brightgreen') q.push('color=' + encodeURIComponent(val('color').value));
    if (val('logo').value.trim()) q.push('logo=' + encodeURIComponent(val('logo').value.trim()));
    if (val('logo').value.trim() && val('logo_color').value.trim()) q.push('logo_color=' + encodeURIComponent(val('logo_color').value.trim()));
    if (val('abbr').checked) q.push('abbreviated=true');
    var url = location.origin + '/counter/' + key + '.svg' + (q.length ? '?' + q.join('&') : '');
    var alt = val('label').value || 'visitors';
    val('md').value = '![' + alt.replace(/[\[\]]/g, '') + '](' + url + ')';
    val('html').value = '<img src="' + esc(url) + '" alt="' + esc(alt) + '">';
  }
  f.addEventListener('input', update);
  f.addEventListener('change', update);
  update();
})();
