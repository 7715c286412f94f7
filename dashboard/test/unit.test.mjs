// Pure functions of the dashboard, in node (no browser): fio histogram math, the
// interval-record series, runtime parsing, API normalization, the submit body.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bucketValue, histPercentile, histPercentiles, SeriesBuilder, expectedRuntime, parseFioTime, parseCell } from '../src/stats.js';
import { normRun, normAgent, normRecord, normCompare, normJob, normState, parseSse } from '../src/api.js';
import { buildBody, formFieldFor, parseVariants, parseSweep } from '../src/pages/submit.js';
import { iodepthGroups } from '../src/pages/compare.js';
import { bucketIndex } from '../testlib/fake_api.mjs';

describe('fio histogram', () => {
  it('maps bucket indexes to fio values', () => {
    for (let i = 0; i < 128; i++) assert.equal(bucketValue(i), i);
    assert.equal(bucketValue(128), 129); // e=1: 128 + 0.5*2, the bucket [128, 130) midpoint
    assert.equal(bucketValue(317), 1004); // fio-reference: 1000 ns -> idx 317 -> 1004
    assert.equal(bucketValue(1855), Math.floor(2 ** 33 + 63.5 * 2 ** 27));
    // Every value lands in a bucket whose representative is within 1/128.
    for (const v of [129, 1000, 4567, 100000, 1e6, 123456789]) {
      const rep = bucketValue(bucketIndex(v));
      assert.ok(Math.abs(rep - v) / v <= 1 / 128 + 1e-9, `${v} -> ${rep}`);
    }
  });

  it('takes percentiles from the first bucket reaching p% of the samples', () => {
    const h = new Map([
      [100, 50],
      [317, 49],
      [700, 1],
    ]);
    assert.equal(histPercentile(h, 50), 100);
    assert.equal(histPercentile(h, 50.5), 1004);
    assert.equal(histPercentile(h, 99), 1004);
    assert.equal(histPercentile(h, 99.5), bucketValue(700));
    assert.equal(histPercentile(new Map(), 50), null);
    assert.deepEqual(histPercentiles(h, [99, 50]), { 50: 100, 99: 1004 });
  });
});

describe('SeriesBuilder', () => {
  const rec = (job_index, seq, ios, hist, t0 = 1000) => ({
    job_index,
    seq,
    t_start_ms: t0 + seq * 1000,
    t_end_ms: t0 + (seq + 1) * 1000,
    read: { ios, bytes: ios * 4096, errors: 0, hist },
    write: { ios: 0, bytes: 0, errors: 0, hist: [] },
    trim: { ios: 0, bytes: 0, errors: 0, hist: [] },
  });

  it('sums clones per window, merges their histograms and ignores repeats', () => {
    const s = new SeriesBuilder();
    assert.equal(s.add([rec(0, 0, 100, [[10, 100]]), rec(1, 0, 300, [[20, 300]])]), 2);
    assert.equal(s.add([rec(0, 0, 100, [[10, 100]]), rec(0, 1, 50, [[30, 50]])]), 1);
    const c = s.columns();
    assert.deepEqual(c.x, [1, 2]);
    assert.deepEqual(c.readIops, [400, 50]);
    assert.deepEqual(c.readBw, [400 * 4096, 50 * 4096]);
    assert.deepEqual(c.p50, [20, 30]); // merged: 100 at 10 ns, 300 at 20 ns
    assert.deepEqual(c.p99, [20, 30]);
    assert.deepEqual([...c.activeDirs], ['read']);
    assert.equal(s.elapsedSeconds(), 2);
  });
});

describe('runtime', () => {
  it('parses fio time values and job files', () => {
    assert.equal(parseFioTime('30'), 30);
    assert.equal(parseFioTime('2m'), 120);
    assert.equal(parseFioTime('500ms'), 0.5);
    assert.equal(expectedRuntime('[global]\nruntime=10\nramp_time=2\n[a]\nrw=read\n[b]\nruntime=20\n'), 22);
    assert.equal(expectedRuntime('[a]\nruntime=10\n[b]\nstonewall\nruntime=5\n'), 15);
    assert.equal(expectedRuntime('[a]\nrw=read\n'), null);
    assert.equal(expectedRuntime('[a]\nruntime=10\n', { runtime: '4' }), 4);
    assert.deepEqual(parseCell('iodepth=32,rw=randread'), { iodepth: '32', rw: 'randread' });
  });
});

describe('API normalization', () => {
  it('reads the controller REST shapes', () => {
    const r = normRun({ id: 'j1-1', job_id: 'j1', state: 'running', created_ms: 5, result: null });
    assert.equal(r.state, 'running');
    assert.equal(r.result, null);
    const a = normAgent({
      name: 'a1',
      state: 'up',
      last_seen_ms: 7,
      inventory: { hostname: 'vm', numa_nodes: [{ cpus: [0, 1] }], block_devices: [{ name: 'vda', size_bytes: '274877906944', numa_node: -1 }] },
    });
    assert.equal(a.inventory.numa_nodes[0].id, 0);
    assert.equal(a.inventory.block_devices[0].size_bytes, 274877906944);
    const rec = normRecord({ job_index: 0, seq: 3, read: { ios: 5, bytes: 20, errors: 0, clat_hist: [[228, 67], [230, 1474]] }, write: {}, trim: {} });
    assert.deepEqual(rec.read.hist, [[228, 67], [230, 1474]]);
    assert.equal(rec.write.ios, 0);
  });

  it('reads protobuf-JSON shapes too', () => {
    const r = normRun({ id: 'r', jobId: 'j', state: 'RUN_STATE_SUCCEEDED', startedMs: '12', resultJson: '{"jobs":[]}' });
    assert.equal(r.job_id, 'j');
    assert.equal(r.state, 'succeeded');
    assert.equal(r.started_ms, 12);
    assert.deepEqual(r.result, { jobs: [] });
    assert.equal(normState(3), 'running');
    const a = normAgent({ name: 'x', inventoryJson: '{"cpuModel":"EPYC"}' });
    assert.equal(a.inventory.cpu_model, 'EPYC');
    const rec = normRecord({ seq: '2', read: { ios: '9', clatBucket: [1, 2], clatCount: ['3', '4'] } });
    assert.deepEqual(rec.read.hist, [[1, 3], [2, 4]]);
    const t = normCompare({ tableJson: JSON.stringify({ arm_a: 'old', rows: [{ cell: 'c' }] }) });
    assert.equal(t.arm_a, 'old');
    assert.equal(t.rows.length, 1);
    const j = normJob({ id: 'j', spec: { fioText: 'x', sweep: { iodepth: { values: ['1', '2'] } } } });
    assert.equal(j.spec.fio, 'x');
    assert.deepEqual(j.spec.sweep, { iodepth: ['1', '2'] });
  });
});

describe('submit form', () => {
  const base = { name: 'n', fio: '[a]\nrw=read\n', hosts: '', selector: '', repeat: '', tags: '', variants: '', sweep: '' };

  it('builds the POST /jobs body of controller/api/rest/json_codec.h', () => {
    const body = buildBody({
      ...base,
      hosts: 'a1, a2',
      selector: 'rack=r1',
      repeat: '3',
      tags: 'branch=main, build=7',
      variants: 'A: hosts=a1\nB: iodepth=64 hosts=a2',
      sweep: 'iodepth=1,4\nbs=4k, 8k',
    });
    assert.deepEqual(body, {
      name: 'n',
      fio: '[a]\nrw=read\n',
      hosts: ['a1', 'a2'],
      selector: { rack: 'r1' },
      repeat: 3,
      tags: { branch: 'main', build: '7' },
      variants: [
        { name: 'A', options: {}, hosts: ['a1'] },
        { name: 'B', options: { iodepth: '64' }, hosts: ['a2'] },
      ],
      sweep: { iodepth: ['1', '4'], bs: ['4k', '8k'] },
    });
    assert.deepEqual(buildBody(base), { name: 'n', fio: '[a]\nrw=read\n' });
  });

  it('reports malformed input on the field', () => {
    assert.throws(() => buildBody({ ...base, fio: ' ' }), (e) => e.field === 'fio');
    assert.throws(() => buildBody({ ...base, repeat: '0' }), (e) => e.field === 'repeat');
    assert.throws(() => buildBody({ ...base, tags: 'x' }), (e) => e.field === 'tags');
    assert.throws(() => parseVariants('B: iodepth'), (e) => e.field === 'variants');
    assert.throws(() => parseSweep('iodepth='), (e) => e.field === 'sweep');
  });

  it('maps API error fields to form fields', () => {
    assert.equal(formFieldFor('fio'), 'fio');
    assert.equal(formFieldFor('options'), 'fio');
    assert.equal(formFieldFor('hosts[1]'), 'hosts');
    assert.equal(formFieldFor('hosts', 'no registered agent matches selector {rack=x}'), 'selector');
    assert.equal(formFieldFor('host_overrides.a1'), 'hosts');
    assert.equal(formFieldFor('variants[1].options.bs'), 'variants');
    assert.equal(formFieldFor('sweep.iodepth'), 'sweep');
    assert.equal(formFieldFor('sweep (cell iodepth=0)'), 'sweep');
    assert.equal(formFieldFor('body'), null);
    assert.equal(formFieldFor(null), null);
  });
});

describe('compare', () => {
  it('finds iodepth sweeps', () => {
    const rows = ['iodepth=1,rw=read', 'iodepth=8,rw=read', 'iodepth=1,rw=write', 'iodepth=8,rw=write'].map((cell) => ({ cell, metric: 'iops' }));
    const g = iodepthGroups(rows);
    assert.deepEqual([...g.keys()], ['rw=read', 'rw=write']);
    assert.deepEqual(g.get('rw=read').map((p) => p.x), [1, 8]);
    assert.equal(iodepthGroups([{ cell: 'all', metric: 'iops' }]).size, 0);
    assert.equal(iodepthGroups([{ cell: 'bs=4k', metric: 'iops' }, { cell: 'bs=8k', metric: 'iops' }]).size, 0);
  });
});

describe('printable', async () => {
  const { printable } = await import('../src/dom.js');
  it('shows control characters as escapes, keeps the rest', () => {
    assert.equal(printable('job\u0000tail'), 'job\\x00tail');
    assert.equal(printable('\u001b[2J\u001b[Hwiped'), '\\x1b[2J\\x1b[Hwiped');
    assert.equal(printable('csi\u009b'), 'csi\\u009b');
    assert.equal(printable('a\nb\tc é'), 'a\nb\tc é');
    assert.equal(printable(42), '42');
  });
});

describe('watch stream (server-sent events)', () => {
  it('parses events split anywhere across reads, skips comments, keeps the tail', () => {
    const text =
      'event: record\ndata: {"seq":"0"}\n\n: keepalive\n\nevent: replayed\r\ndata: {"records":1}\r\n\r\n' +
      'event: record\ndata: {"seq":"1"}\n\nevent: end\ndata: {"state":"succeeded"}\n\n';
    for (let cut = 0; cut <= text.length; cut++) {
      const got = [];
      let buf = parseSse(text.slice(0, cut), (e, d) => got.push([e, JSON.parse(d)]));
      buf = parseSse(buf + text.slice(cut), (e, d) => got.push([e, JSON.parse(d)]));
      assert.equal(buf, '');
      assert.deepEqual(
        got.map(([e]) => e),
        ['record', 'replayed', 'record', 'end'],
        `cut at ${cut}`,
      );
      assert.equal(got[3][1].state, 'succeeded');
    }
  });
});

describe('fio units', () => {
  // The strings fio 3.33 printed (the C++ helper's test reads the same file).
  it('formats IOPS and bandwidth as fio normal output does', async () => {
    const { readFileSync } = await import('node:fs');
    const { fileURLToPath } = await import('node:url');
    const { fioIopsBw } = await import('../src/fio_units.js');
    const file = fileURLToPath(new URL('../../common/stats/testdata/fio-3.33-iops-bw.txt', import.meta.url));
    let n = 0;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line || line[0] === '#') continue;
      const [ios, bytes, runtime, kb, ...rest] = line.split(' ');
      const iops = (BigInt(ios) * 1000n) / BigInt(runtime);
      const bw = (BigInt(bytes) * 1000n) / BigInt(runtime);
      assert.equal(fioIopsBw(iops, bw, Number(kb)), rest.join(' '), line);
      n++;
    }
    assert.ok(n >= 10);
  });
  it('rounds an exact tie to even as C printf does', async () => {
    const { num2str } = await import('../src/fio_units.js');
    assert.equal(num2str(12.25 * 1048576, 4, true, 'B'), '12.2MiB'); // printf("%.1f", 0.25) = 0.2
    assert.equal(num2str(12750000, 4, false, 'B'), '12.8MB'); // 0.75 -> 0.8
    assert.equal(num2str(12450000, 4, false, ''), '12.5M'); // 0.45 is stored above .45
    assert.equal(num2str(99960, 4, false, ''), '100.0k');
  });
});
