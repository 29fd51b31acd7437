"""Privacy-producing randomness.

Every random draw that protects someone comes from :class:`SecureRandom`: an AES-256-CTR
keystream whose key and nonce come from the operating system's CSPRNG (``os.urandom``),
the construction of NIST SP 800-90A's CTR_DRBG and of the kernel's own generator (which
keys ChaCha20 the same way). We key a fresh stream per call, so no state outlives a draw.
Reading ``os.urandom`` directly runs at ~330 MB/s here; the keyed stream at ~1.5 GB/s,
which is what lets randomized response reach its throughput target (see benchmarks/).

A ``seed`` turns the stream deterministic (the key is derived from the seed). That exists
only for the service's explicit reproducible test mode, whose releases say "not private".
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

RNG_NAME = "AES-256-CTR keystream keyed by os.urandom (CTR_DRBG construction)"
SEEDED_RNG_NAME = "AES-256-CTR keystream keyed by SHA-256(seed): reproducible, NOT private"

_TWO_POW_53 = float(2**53)


class SecureRandom:
    """Vectorized CSPRNG draws. Not thread-safe: one instance per job."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self._counter = 0  # distinguishes the streams of a seeded generator
        self.bytes_drawn = 0  # all randomness passes through bytes(): 0 means none was used

    @property
    def name(self) -> str:
        return RNG_NAME if self.seed is None else SEEDED_RNG_NAME

    @property
    def is_private(self) -> bool:
        return self.seed is None

    # -- raw material -----------------------------------------------------------------
    def _key_and_nonce(self) -> tuple[bytes, bytes]:
        if self.seed is None:
            return os.urandom(32), os.urandom(16)
        self._counter += 1
        digest = hashlib.sha512(f"veil:{self.seed}:{self._counter}".encode()).digest()
        return digest[:32], digest[32:48]

    def bytes(self, n: int) -> np.ndarray:
        """n uniformly random bytes as a uint8 array."""
        n = int(n)
        if n <= 0:
            return np.zeros(0, dtype=np.uint8)
        self.bytes_drawn += n
        key, nonce = self._key_and_nonce()
        encryptor = Cipher(algorithms.AES(key), modes.CTR(nonce)).encryptor()
        zeros = bytearray(n)
        out = bytearray(n + 15)  # update_into wants block_size - 1 bytes of slack
        written = encryptor.update_into(zeros, out)
        return np.frombuffer(out, dtype=np.uint8, count=written)

    def uint32(self, size) -> np.ndarray:
        shape = _shape(size)
        count = int(np.prod(shape))
        return self.bytes(4 * count).view(np.uint32).reshape(shape)

    def uint64(self, size) -> np.ndarray:
        shape = _shape(size)
        count = int(np.prod(shape))
        return self.bytes(8 * count).view(np.uint64).reshape(shape)

    # -- distributions ----------------------------------------------------------------
    def random(self, size) -> np.ndarray:
        """Uniform floats on [0, 1) with 53 random bits each."""
        return (self.uint64(size) >> np.uint64(11)).astype(np.float64) / _TWO_POW_53

    def integers(self, high: int, size) -> np.ndarray:
        """Uniform integers on [0, high). Bias at most high / 2**53 (floor of a 53-bit float)."""
        if high <= 0:
            raise ValueError("high must be positive")
        return np.minimum((self.random(size) * high).astype(np.int64), high - 1)

    def normal(self, size, loc: float = 0.0, scale: float = 1.0) -> np.ndarray:
        """Gaussian draws by the Box–Muller transform on CSPRNG uniforms."""
        shape = _shape(size)
        count = int(np.prod(shape))
        half = (count + 1) // 2
        u1 = 1.0 - self.random(half)  # (0, 1]: log is finite
        u2 = self.random(half)
        radius = np.sqrt(-2.0 * np.log(u1))
        angle = 2.0 * np.pi * u2
        z = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)])[:count]
        return (loc + scale * z).reshape(shape)

    def permutation(self, n: int) -> np.ndarray:
        """A uniformly random permutation of range(n) (sort by 64-bit random keys)."""
        return np.argsort(self.uint64(n), kind="stable")

    def choice(self, n: int, size, p: np.ndarray | None = None) -> np.ndarray:
        """Indices in [0, n), uniform or with probabilities p (inverse CDF)."""
        if p is None:
            return self.integers(n, size)
        cdf = np.cumsum(np.asarray(p, dtype=np.float64))
        cdf /= cdf[-1]
        return np.minimum(np.searchsorted(cdf, self.random(size), side="right"), n - 1)


def _shape(size) -> tuple[int, ...]:
    if isinstance(size, (int, np.integer)):
        return (int(size),)
    return tuple(int(s) for s in size)
