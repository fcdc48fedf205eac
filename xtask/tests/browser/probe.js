// Injected by xtask/tests/browser.rs into a copy of report.html whose print rules apply on
// screen, at the width of an A4 page's printable area: reports, one line each, the page's
// width against the window's and every figure's and table's extent, into <pre id="probe">.
window.addEventListener('load', () => {
  const width = document.documentElement.clientWidth;
  const lines = ['page ' + document.documentElement.scrollWidth + ' ' + width];
  document.querySelectorAll('figure.chart').forEach((f) => {
    const svg = f.querySelector('svg');
    const r = svg ? svg.getBoundingClientRect() : { left: 0, right: 0, width: 0, height: 0 };
    const drawn = svg ? svg.querySelectorAll('text, rect, path, polyline, circle, polygon, line').length : 0;
    lines.push(['figure', f.id, Math.round(r.left), Math.round(r.right), Math.round(r.width), Math.round(r.height), drawn].join(' '));
  });
  document.querySelectorAll('div.table').forEach((t, i) => {
    const r = t.querySelector('table').getBoundingClientRect();
    lines.push(['table', t.id || 'table' + i, Math.round(r.left), Math.round(r.right)].join(' '));
  });
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = lines.join('\n');
  document.body.appendChild(pre);
});
