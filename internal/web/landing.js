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
  // The badge builder: every option of the /counter/ routes. What it
  // builds goes into the page only as text (textarea values) or as a
  // property (the preview's src), never as markup.
  var f = document.getElementById('maker');
  function val(id) { return document.getElementById(id); }
  function text(id) { return val(id).value.trim(); }
  function esc(s) { return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;'); }
  function build() {
    var key = text('key') || 'your/key';
    var q = [];
    function add(name, v) { if (v) q.push(name + '=' + encodeURIComponent(v)); }
    if (val('label').value !== 'visitors') q.push('label=' + encodeURIComponent(val('label').value));
    if (text('color') !== 'brightgreen') add('color', text('color'));
    add('label_color', text('label_color'));
    if (val('style').value !== 'flat') add('style', val('style').value);
    add('logo', text('logo'));
    if (text('logo')) add('logo_color', text('logo_color'));
    if (val('abbr').checked) q.push('abbreviated=true');
    add('show', val('show').value);
    if (val('nocount').checked) q.push('count=false');
    var path = '/counter/' + key.split('/').map(encodeURIComponent).join('/') + '.svg';
    return {path: path, q: q};
  }
  var preview = val('builder-preview'), timer = 0;
  function showPreview() {
    // The preview reads the counter without counting a visit.
    var b = build(), q = b.q.slice();
    if (q.indexOf('count=false') < 0) q.push('count=false');
    var src = location.origin + b.path + '?' + q.join('&');
    if (preview.src !== src) preview.src = src;
  }
  function update() {
    var b = build();
    var url = location.origin + b.path + (b.q.length ? '?' + b.q.join('&') : '');
    var alt = val('label').value || 'visitors';
    val('md').value = '![' + alt.replace(/[\[\]]/g, '') + '](' + url + ')';
    val('html').value = '<img src="' + esc(url) + '" alt="' + esc(alt) + '">';
    clearTimeout(timer);
    timer = setTimeout(showPreview, 300);
  }
  f.addEventListener('input', update);
  f.addEventListener('change', update);
  f.addEventListener('submit', function (e) { e.preventDefault(); });
  update();
  showPreview();
})();
