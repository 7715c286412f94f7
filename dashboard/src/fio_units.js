// fio's number formatting, ported from common/stats/fio_units.cc (fio's
// num2str): the same strings as fio's normal output and the CLI, e.g.
// "IOPS=12.1k, BW=47.4MiB/s (49.8MB/s)". Tested against strings fio 3.33
// printed (common/stats/testdata/fio-3.33-iops-bw.txt, test/unit.test.mjs).

const SI = ['', 'k', 'M', 'G', 'T', 'P', 'E'];
const IEC = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

const digits = (n) => String(n).length;

// C's printf("%.*f", k, d): the double's exact value rounded, an exact tie to
// even (glibc). toFixed rounds an exact tie up, so ties are found in the
// exact expansion (toFixed(30) shows it for these ratios) and evened here.
function printfFixed(d, k) {
  const long = d.toFixed(30);
  const dot = long.indexOf('.');
  const tail = long.slice(dot + 1 + k);
  if (!/^50*$/.test(tail)) return d.toFixed(k);
  const cut = long.slice(0, dot + 1 + k);
  if (Number(cut[cut.length - 1]) % 2 === 0) return cut;
  return (Number(cut) + 10 ** -k).toFixed(k);
}

// num: a non-negative integer (BigInt or Number); at most maxlen digits.
export function num2str(num, maxlen, pow2, unit, firstPrefix = 0) {
  let n = BigInt(Math.max(0, Math.round(Number(num))));
  const prefix = pow2 ? IEC : SI;
  const thousand = pow2 ? 1024n : 1000n;
  let post = firstPrefix;
  let scaled = false;
  let remainder = 0n;
  while (post < 7 && digits(n) > maxlen) {
    remainder = n % thousand;
    n /= thousand;
    scaled = true;
    post++;
  }
  if (post >= 7) post = 0;
  if (!scaled) return `${n}${prefix[post]}${unit}`;
  const room = maxlen - digits(n);
  if (room <= 1) {
    if (remainder >= thousand / 2n) n += 1n;
    return `${n}${prefix[post]}${unit}`;
  }
  const frac = printfFixed(Number(remainder) / Number(thousand), room - 1);
  if (frac[0] === '1') n += 1n;
  return `${n}.${frac.slice(2)}${prefix[post]}${unit}`;
}

const isPow2 = (v) => v > 0 && (v & (v - 1)) === 0;

export function fioIops(iops) {
  return num2str(iops, 4, false, '');
}

export function fioBwOne(bps, kbBase = 1024) {
  return num2str(bps, 4, isPow2(kbBase || 1024), 'B/s');
}

export function fioBw(bps, kbBase = 1024) {
  const i2p = isPow2(kbBase || 1024);
  return `${num2str(bps, 4, i2p, 'B/s')} (${num2str(bps, 4, !i2p, 'B/s')})`;
}

export function fioIopsBw(iops, bps, kbBase = 1024) {
  return `IOPS=${fioIops(iops)}, BW=${fioBw(bps, kbBase)}`;
}
