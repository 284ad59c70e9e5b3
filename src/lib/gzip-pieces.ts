/**
 * A gzip file joined from independently compressed pieces (RFC 1951 section 3.2.3, RFC 1952), so the
 * export build can compress its file as segments in parallel on libuv's thread pool, as pigz does
 * (issue: serving quotes at the machine's limit, export build target).
 *
 * A piece is raw DEFLATE data ended by a sync flush: it sets no final-block bit and ends on a byte boundary,
 * and none of its back-references reaches before its own start, so pieces can follow each other in any order
 * and still form one valid DEFLATE stream. The file is the gzip header, the pieces, an empty final block, and
 * the trailer: the CRC-32 of all the uncompressed bytes (combined from each piece's own CRC-32 and length, as
 * zlib's crc32_combine does) and their length modulo 2^32. Any gzip reader (gunzip, browsers, node:zlib)
 * reads it as one member.
 */
import zlib from 'node:zlib';

/** One compressed piece: its DEFLATE bytes, and the CRC-32 and byte length of the text it holds. */
export interface GzipPiece {
  deflated: Buffer;
  /** CRC-32 (IEEE) of the uncompressed bytes, unsigned. */
  crc: number;
  /** Uncompressed length in bytes. */
  length: number;
}

/** Compression level of every piece (the export's level before pieces: gzip -6). */
const PIECE_LEVEL = 6;

/**
 * `bytes` as a piece, compressed on libuv's thread pool (node:zlib's asynchronous call, so several pieces
 * compress in parallel): raw DEFLATE at PIECE_LEVEL ended by a sync flush. Deterministic for one zlib version
 * (`process.versions.zlib`): the same bytes give the same piece. Rejects with zlib's error.
 */
export function deflatePiece(bytes: Buffer): Promise<GzipPiece> {
  return new Promise((resolve, reject) => {
    zlib.deflateRaw(bytes, { level: PIECE_LEVEL, finishFlush: zlib.constants.Z_SYNC_FLUSH }, (error, deflated) => {
      if (error) reject(error);
      else resolve({ deflated, crc: zlib.crc32(bytes) >>> 0, length: bytes.length });
    });
  });
}

/** gzip header: magic, DEFLATE, no flags, no modification time, no extra flags, OS unknown (255). */
const HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
/** An empty final block with fixed Huffman codes: BFINAL 1, BTYPE 01, end-of-block 0000000. */
const FINAL_BLOCK = Buffer.from([0x03, 0x00]);

/** The reflected CRC-32 polynomial. */
const POLY = 0xedb88320;

/** a(x) * b(x) modulo the CRC-32 polynomial, both reflected (bit 31 is x^0). `a` must not be 0. */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[n] = x^(2^n) modulo the polynomial. */
const X2N: number[] = [];
{
  let p = 0x40000000; // x^1
  X2N.push(p);
  for (let n = 1; n < 32; n++) X2N.push((p = multModP(p, p)));
}

/** x^(n * 2^k) modulo the polynomial. */
function x2nModP(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multModP(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k += 1;
  }
  return p;
}

/**
 * The CRC-32 of the concatenation A + B from crc(A), crc(B) and B's length in bytes, as zlib's crc32_combine
 * computes it: crc(A) shifted over B's length (times x^(8 * lengthB) modulo the polynomial), then xor crc(B).
 */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  if (lengthB <= 0) return crcA >>> 0;
  return (multModP(x2nModP(lengthB, 3), crcA >>> 0) ^ crcB) >>> 0;
}

/**
 * Writes one gzip file from pieces, in order: `header()` first, `piece()` for each, `end()` last. Each returns
 * the bytes to append to the file; the writer keeps the running CRC-32 and length for the trailer.
 */
export class GzipJoiner {
  private crc = 0;
  /** Uncompressed bytes so far (the trailer keeps them modulo 2^32). */
  private length = 0;

  /** The 10-byte gzip header. */
  header(): Buffer {
    return HEADER;
  }

  /** The piece's DEFLATE bytes, counted into the trailer. */
  piece(p: GzipPiece): Buffer {
    this.crc = crc32Combine(this.crc, p.crc, p.length);
    this.length += p.length;
    return p.deflated;
  }

  /** The final block and the trailer (CRC-32 and length modulo 2^32, little-endian). */
  end(): Buffer {
    const tail = Buffer.alloc(10);
    FINAL_BLOCK.copy(tail, 0);
    tail.writeUInt32LE(this.crc >>> 0, 2);
    tail.writeUInt32LE(this.length % 2 ** 32, 6);
    return tail;
  }
}
