// Agent inventory: one row per registered agent, paged.
import { listAgents } from '../api.js';
import { h, replace, fmtAgo, fmtBytes, kvList, errorBox, pager, poller } from '../dom.js';

// Tokens of the pages before the current one (kept while the app is open).
let stack = [];

function numaSummary(nodes) {
  if (!nodes.length) return h('span', { class: 'muted' }, '–');
  return h(
    'ul',
    { class: 'plain' },
    nodes.map((n) => h('li', null, `node ${n.id}: ${compactCpus(n.cpus)}`)),
  );
}

// [0,1,2,3,8,9] -> "0-3,8-9"
export function compactCpus(cpus) {
  if (!cpus.length) return 'no CPUs';
  const s = [...cpus].sort((a, b) => a - b);
  const parts = [];
  let lo = s[0];
  let prev = s[0];
  for (let i = 1; i <= s.length; i++) {
    if (i < s.length && s[i] === prev + 1) {
      prev = s[i];
      continue;
    }
    parts.push(lo === prev ? `${lo}` : `${lo}-${prev}`);
    if (i < s.length) lo = prev = s[i];
  }
  return `CPUs ${parts.join(',')}`;
}

function devices(devs) {
  if (!devs.length) return h('span', { class: 'muted' }, '–');
  return h(
    'ul',
    { class: 'plain' },
    devs.map((d) =>
      h(
        'li',
        null,
        h('code', null, d.name),
        ' ',
        [d.model, d.size_bytes > 0 ? fmtBytes(d.size_bytes) : '', d.rotational ? 'HDD' : 'SSD', d.numa_node >= 0 ? `node ${d.numa_node}` : '']
          .filter(Boolean)
          .join(' · '),
      ),
    ),
  );
}

export function agentsPage(main, { params }) {
  document.title = 'Agents · iofleet';
  const token = params.get('t') || '';
  if (!token) stack = [];
  const status = h('p', { class: 'muted', 'aria-live': 'polite' }, 'Loading…');
  const body = h('div');
  main.append(h('h1', null, 'Agents'), status, body);

  const p = poller(async (signal) => {
    let page;
    try {
      page = await listAgents({ pageSize: 100, pageToken: token, signal });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      replace(body, errorBox(e));
      status.textContent = '';
      return true;
    }
    const up = page.agents.filter((a) => a.state === 'up').length;
    status.textContent = `${page.agents.length} agent${page.agents.length === 1 ? '' : 's'} on this page, ${up} up. Refreshes every 5 s.`;
    const rows = page.agents.map((a) =>
      h(
        'tr',
        { dataset: { agent: a.name } },
        h('th', { scope: 'row' }, a.name, a.inventory.hostname && a.inventory.hostname !== a.name ? h('div', { class: 'muted small' }, a.inventory.hostname) : null),
        h('td', null, h('span', { class: `badge agent-${a.state}` }, a.state)),
        h('td', { title: a.last_seen_ms ? new Date(a.last_seen_ms).toISOString() : '' }, fmtAgo(a.last_seen_ms)),
        h('td', null, a.inventory.kernel_release || '–'),
        h('td', null, a.inventory.cpu_model || '–', a.inventory.cpu_count ? h('div', { class: 'muted small' }, `${a.inventory.cpu_count} CPUs`) : null),
        h('td', null, numaSummary(a.inventory.numa_nodes)),
        h('td', null, devices(a.inventory.block_devices)),
        h('td', null, a.inventory.engines.length ? a.inventory.engines.join(', ') : '–'),
        h('td', null, kvList(a.labels)),
        h('td', null, a.inventory.agent_version || '–'),
      ),
    );
    replace(
      body,
      page.agents.length
        ? h(
            'div',
            { class: 'table-wrap' },
            h(
              'table',
              { class: 'grid', 'aria-label': 'agents' },
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  ['Agent', 'State', 'Last seen', 'Kernel', 'CPU', 'NUMA nodes', 'Block devices', 'Engines', 'Labels', 'Version'].map((c) =>
                    h('th', { scope: 'col' }, c),
                  ),
                ),
              ),
              h('tbody', null, rows),
            ),
          )
        : h('p', null, 'No agents have registered. Start one with ', h('code', null, 'iofleet-agent serve --controller=HOST:PORT'), '.'),
      pager({
        label: 'agent pages',
        hasPrev: !!token,
        hasNext: !!page.next,
        onPrev: () => {
          const prev = stack.pop() || '';
          location.hash = prev ? `#/agents?t=${encodeURIComponent(prev)}` : '#/agents';
        },
        onNext: () => {
          stack.push(token);
          location.hash = `#/agents?t=${encodeURIComponent(page.next)}`;
        },
      }),
    );
    return true;
  }, 5000);
  return () => p.stop();
}
