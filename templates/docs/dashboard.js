// The dashboard page: reads the dashboard's spec and its tiles' data from the API (with the
// session cookie, or the api_key of the page's link) and draws each tile with Apache ECharts.
// No inline script and no HTML built from strings: every text goes in with textContent.
(function () {
  'use strict';
  var body = document.body;
  var id = body.getAttribute('data-dashboard');
  var key = new URLSearchParams(location.search).get('api_key');
  var charts = [];
  var spec = null;

  function request(path) {
    var headers = { Accept: 'application/json' };
    if (key) headers['X-API-Key'] = key;
    return fetch(path, { credentials: 'same-origin', headers: headers }).then(function (res) {
      return res.json().then(function (b) {
        if (!res.ok) throw new Error((b && b.message) || ('HTTP ' + res.status));
        return b;
      });
    });
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function status(text, isError) {
    var s = document.getElementById('status');
    s.textContent = text;
    s.className = isError ? 'error' : '';
  }

  function num(v) {
    if (typeof v === 'number') return v;
    var n = parseFloat(v);
    return isNaN(n) ? null : n;
  }

  function format(v, how) {
    var n = num(v);
    if (n === null) return v === null || v === undefined ? '—' : String(v);
    if (how === 'percent') return (n * 100).toLocaleString(undefined, { maximumFractionDigits: 1 }) + ' %';
    if (how === 'integer') return Math.round(n).toLocaleString();
    return n.toLocaleString(undefined, { maximumFractionDigits: 2 });
  }

  function column(data, name) {
    for (var i = 0; i < data.columns.length; i++) if (data.columns[i].name === name) return i;
    return -1;
  }

  function values(data, name, numeric) {
    var i = column(data, name);
    if (i < 0) throw new Error('the tile\'s data has no column ' + name);
    return data.rows.map(function (r) { return numeric ? num(r[i]) : r[i]; });
  }

  // option is the ECharts option of a chart tile, from its encoding and data alone.
  function option(tile, data) {
    var enc = tile.encoding || {};
    var base = { animation: false, grid: { left: 56, right: 16, top: 24, bottom: 40, containLabel: true },
      tooltip: { trigger: 'axis', renderMode: 'richText' } };
    var ys = enc.y || [];
    switch (tile.type) {
      case 'line':
      case 'area':
        var time = !!enc.time_grain;
        base.xAxis = { type: time ? 'time' : 'category', data: time ? undefined : values(data, enc.x) };
        base.yAxis = { type: 'value' };
        var xs = values(data, enc.x);
        // A partial last period is drawn dashed and unfilled, apart from the whole ones.
        var cut = data.partial_period != null && xs.length > 1 ? xs.length - 1 : xs.length;
        base.series = [];
        ys.forEach(function (y) {
          var v = values(data, y, true);
          var points = time ? xs.map(function (x, i) { return [x, v[i]]; }) : v;
          base.series.push({ name: y, type: 'line', showSymbol: false, areaStyle: tile.type === 'area' ? {} : undefined,
            data: points.slice(0, cut) });
          if (cut < xs.length) {
            base.series.push({ name: y + ' (partial)', type: 'line', showSymbol: true, lineStyle: { type: 'dashed' },
              data: time ? points.slice(cut - 1) : points.map(function (p, i) { return i >= cut - 1 ? p : null; }) });
          }
        });
        if (ys.length > 1) base.legend = { top: 0 };
        return base;
      case 'bar':
      case 'stacked_bar':
      case 'histogram':
        var cats = values(data, enc.x);
        if (tile.type === 'histogram' && enc.x_end) {
          var ends = values(data, enc.x_end);
          cats = cats.map(function (c, i) { return format(c) + '–' + format(ends[i]); });
        }
        base.xAxis = { type: 'category', data: cats, axisLabel: { interval: 0, rotate: cats.length > 6 ? 30 : 0 } };
        base.yAxis = { type: 'value' };
        if (tile.type === 'stacked_bar' && enc.series) {
          var sIdx = column(data, enc.series), xIdx = column(data, enc.x), yIdx = column(data, ys[0]);
          var xcats = [], groups = {};
          data.rows.forEach(function (r) {
            if (xcats.indexOf(r[xIdx]) < 0) xcats.push(r[xIdx]);
            (groups[r[sIdx]] = groups[r[sIdx]] || {})[r[xIdx]] = num(r[yIdx]);
          });
          base.xAxis.data = xcats;
          base.series = Object.keys(groups).map(function (g) {
            return { name: g, type: 'bar', stack: 'total', data: xcats.map(function (x) { return groups[g][x] || 0; }) };
          });
          base.legend = { top: 0 };
          return base;
        }
        base.series = ys.map(function (y) {
          var v = values(data, y, true);
          return { name: y, type: 'bar', barMaxWidth: 48, data: data.partial_period == null ? v : v.map(function (n, i) {
            return i === v.length - 1 ? { value: n, itemStyle: { opacity: 0.4 } } : n;
          }) };
        });
        return base;
      case 'pie':
      case 'donut':
        var labels = values(data, enc.x), vals = values(data, enc.value, true);
        return { animation: false, tooltip: { trigger: 'item', renderMode: 'richText' }, legend: { type: 'scroll', bottom: 0 },
          series: [{ type: 'pie', radius: tile.type === 'donut' ? ['45%', '70%'] : '70%', center: ['50%', '45%'],
            data: labels.map(function (l, i) { return { name: String(l), value: vals[i] }; }) }] };
      case 'scatter':
        var sx = values(data, enc.x, true), sy = values(data, ys[0], true);
        base.tooltip = { trigger: 'item', renderMode: 'richText' };
        base.xAxis = { type: 'value', name: enc.x, scale: true };
        base.yAxis = { type: 'value', name: ys[0], scale: true };
        base.series = [{ type: 'scatter', symbolSize: 6, data: sx.map(function (x, i) { return [x, sy[i]]; }) }];
        return base;
    }
    throw new Error('unknown tile type ' + tile.type);
  }

  function table(tile, data) {
    var cols = (tile.encoding && tile.encoding.columns) || data.columns.map(function (c) { return c.name; });
    var wrap = el('div', 'scroll'), t = el('table'), head = el('tr');
    cols.forEach(function (c) { head.appendChild(el('th', null, c)); });
    t.appendChild(head);
    var idx = cols.map(function (c) { return column(data, c); });
    data.rows.forEach(function (r) {
      var tr = el('tr');
      idx.forEach(function (i) { tr.appendChild(el('td', null, i < 0 || r[i] === null ? '' : r[i])); });
      t.appendChild(tr);
    });
    wrap.appendChild(t);
    return wrap;
  }

  // draw fills a tile's box with its data.
  function draw(box, tile, data) {
    while (box.childNodes.length > 2) box.removeChild(box.lastChild);
    if (data.error) {
      box.appendChild(el('p', 'problem', 'This tile could not be drawn: ' + data.error.message));
      return;
    }
    data.rows = data.rows || []; // an answer without rows leaves them out
    if (!data.rows.length && tile.type !== 'kpi') {
      box.appendChild(el('p', 'note empty', 'No data in this range' + (Object.keys(picked()).length ? ' with these filters.' : '.')));
      box.setAttribute('data-drawn', 'true');
      return;
    }
    try {
      if (tile.type === 'kpi') {
        var v = data.rows.length ? data.rows[0][column(data, tile.encoding.value)] : null;
        box.appendChild(el('div', 'kpi', format(v, tile.encoding.format)));
      } else if (tile.type === 'table') {
        box.appendChild(table(tile, data));
      } else {
        var c = el('div', 'chart');
        box.appendChild(c);
        var chart = echarts.init(c, null, { renderer: 'canvas' });
        chart.setOption(option(tile, data));
        charts.push(chart);
        if (data.partial_period != null) {
          box.appendChild(el('p', 'note partial', 'The last ' + (tile.encoding.time_grain || 'period') + ' (from ' +
            String(data.partial_period).slice(0, 10) + ') is partial: the data stops before it ends.'));
        }
      }
      box.setAttribute('data-drawn', 'true');
    } catch (e) {
      box.appendChild(el('p', 'problem', 'This tile could not be drawn: ' + e.message));
    }
  }

  function layout() {
    var grid = document.getElementById('grid');
    grid.textContent = '';
    var boxes = {};
    spec.rows.forEach(function (row, i) {
      var r = el('div', 'row');
      row.items.forEach(function (tile, j) {
        var box = el('section', 'tile w' + tile.width + ' h' + (tile.height || 1));
        box.setAttribute('data-path', 'rows.' + i + '.items.' + j);
        box.appendChild(el('h2', null, tile.title));
        box.appendChild(el('p', 'note', tile.description || ''));
        r.appendChild(box);
        boxes['rows.' + i + '.items.' + j] = { box: box, tile: tile };
      });
      grid.appendChild(r);
    });
    return boxes;
  }

  function filterControls() {
    var holder = document.getElementById('filters');
    holder.textContent = '';
    // A text box offering the filter's values: a value not listed can be typed too.
    (spec.filters || []).forEach(function (f, i) {
      var label = el('label', null, f.label + ' ');
      var input = el('input');
      input.type = 'search';
      input.placeholder = 'any';
      input.setAttribute('data-filter', f.id);
      var list = el('datalist');
      list.id = 'filter-options-' + i;
      (f.options || []).forEach(function (o) {
        var opt = el('option');
        opt.value = String(o);
        list.appendChild(opt);
      });
      input.setAttribute('list', list.id);
      input.addEventListener('change', load);
      input.addEventListener('keydown', function (e) {
        if (e.key === 'Enter') { e.preventDefault(); load(); } // apply, not submit the form (a reload)
      });
      label.appendChild(input);
      label.appendChild(list);
      holder.appendChild(label);
    });
  }

  // filterValue is what a filter box holds, as the listed option's own value when it is one
  // (a number stays a number), else the typed text.
  function filterValue(f, text) {
    var hit = (f.options || []).filter(function (o) { return String(o) === text; });
    return hit.length ? hit[0] : text;
  }

  // picked are the filters' values in their boxes, by filter id.
  function picked() {
    var out = {};
    (spec.filters || []).forEach(function (f) {
      var box = document.querySelector('input[data-filter="' + f.id + '"]');
      if (box && box.value.trim()) out[f.id] = filterValue(f, box.value.trim());
    });
    return out;
  }

  function load() {
    var q = new URLSearchParams();
    var tr = document.getElementById('time-range').value;
    if (tr) q.set('time_range', tr);
    var chosen = picked();
    if (Object.keys(chosen).length) q.set('filters', JSON.stringify(chosen));
    charts.forEach(function (c) { c.dispose(); });
    charts = [];
    var boxes = layout();
    status('Loading…');
    var qs = q.toString();
    return request('/api/v1/dashboards/' + encodeURIComponent(id) + '/data' + (qs ? '?' + qs : '')).then(function (d) {
      d.tiles.forEach(function (t) {
        var b = boxes[t.path];
        if (b) draw(b.box, b.tile, t);
      });
      var failed = d.tiles.filter(function (t) { return t.error; }).length;
      status(failed ? failed + ' tile(s) could not be drawn' : 'Drawn ' + new Date().toLocaleTimeString(), failed > 0);
      body.setAttribute('data-ready', 'true');
    }).catch(function (e) { status(e.message, true); body.setAttribute('data-ready', 'error'); });
  }

  request('/api/v1/dashboards/' + encodeURIComponent(id)).then(function (d) {
    spec = d.spec;
    document.title = d.display_name;
    document.getElementById('title').textContent = d.display_name;
    document.getElementById('description').textContent = spec.description || '';
    var tr = document.getElementById('time-range');
    tr.options[0].textContent = 'as saved (' + ((spec.time_range && spec.time_range.default) || 'all') + ')';
    tr.addEventListener('change', load);
    document.getElementById('controls').addEventListener('submit', function (e) { e.preventDefault(); load(); });
    filterControls();
    return load();
  }).catch(function (e) { status(e.message, true); body.setAttribute('data-ready', 'error'); });

  window.addEventListener('resize', function () { charts.forEach(function (c) { c.resize(); }); });
})();
