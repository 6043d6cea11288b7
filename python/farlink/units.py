"""Human units for the command line and scenario files.

Every parser takes a string such as ``20.6MB``, ``250ms``, ``1/50min`` or ``2400bps`` and returns a
float in the base unit its name carries (bytes, seconds, events per second, bits per second).
Sizes and rates are decimal (1 KB = 1000 bytes, 1 kbps = 1000 bit/s) unless written with a binary
prefix (KiB, MiB, GiB), as network engineers and the seeds use them. ``B`` is a byte and ``b`` a
bit: ``2MBps`` is 16 Mbit/s, and a size in bits (``5Mb``) is refused; prefixes and the words
``bit``/``byte`` are read in any case (``mbps``, ``kbit``, ``KByte``). docs/units.md tabulates
every spelling, generated from the shared vectors. A parser that cannot read its
input raises :class:`UnitError` naming what it got and the forms it accepts.
"""

from __future__ import annotations

import math
import re

__all__ = [
    "BITRATE_FORMS",
    "DURATION_FORMS",
    "ERROR_RATE_FORMS",
    "EVENT_RATE_FORMS",
    "PROBABILITY_FORMS",
    "SIZE_FORMS",
    "UnitError",
    "parse_bitrate_bps",
    "parse_count",
    "parse_duration_s",
    "parse_error_rate",
    "parse_event_rate_per_s",
    "parse_probability",
    "parse_size_bytes",
]


class UnitError(ValueError):
    """A quantity that could not be read; the message names the input and the accepted forms."""


SIZE_FORMS = (
    "a size in bytes such as 20.6MB, 47.9KB, 1448B, 1448 or 2MiB "
    "(KB/MB/GB decimal, KiB/MiB/GiB binary; B is a byte, b a bit)"
)
DURATION_FORMS = "a duration such as 19s, 250ms, 50min, 1.5h or 19 (seconds)"
EVENT_RATE_FORMS = "a rate such as 1/50min, 0.02/min, 1.2/h, 1/3000s or 0.001 (per second)"
BITRATE_FORMS = (
    "a bit rate such as 2400bps, 128kbps, 1.5Mbps, 2Mbit/s or 10mbit, or bytes per second "
    "such as 250kBps or 2MB/s (b is a bit, B a byte; decimal prefixes)"
)
PROBABILITY_FORMS = "a probability strictly between 0 and 1, such as 5e-4, 0.01 or 0.05%"
ERROR_RATE_FORMS = "a packet error rate in [0, 1)"

_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"

# Decimal and binary prefixes of sizes and rates: (lower-case prefix, factor, canonical spelling,
# name), longest first so that ``Kib`` is ``Ki`` + ``b``. Prefix case never changes the meaning
# (``kB`` = ``KB``; nobody means millibytes by ``mB``), so it is compared lower-cased; the case of
# ``B``/``b`` is what tells bytes from bits.
_PREFIXES = (
    ("ki", 1024.0, "Ki", "kibi"),
    ("mi", 1024.0**2, "Mi", "mebi"),
    ("gi", 1024.0**3, "Gi", "gibi"),
    ("k", 1e3, "K", "kilo"),
    ("m", 1e6, "M", "mega"),
    ("g", 1e9, "G", "giga"),
    ("", 1.0, "", ""),
)

_BITS, _BYTES, _AMBIGUOUS = "bits", "bytes", "ambiguous"


def _base(rest: str, *, per_second: bool, capitals: bool) -> str | None:
    """What a unit's base counts: the words in any case; the letter ``B`` bytes, ``b`` bits.

    Sizes: ``B``, ``byte(s)``, ``b``, ``bit(s)``. Rates: ``Bps``, ``B/s``, ``byte(s)/s``,
    ``bps``, ``b/s``, ``bit(s)/s`` and ``bit(s)`` alone, as ``tc`` writes ``kbit``. A rate unit
    written all in capitals (``BPS``, ``MB/S``) says nothing by the case of ``B``: ambiguous.
    """
    if not rest or not rest.isascii():
        return None
    lower = rest.lower()
    if rest[0] == "b":
        letter = _BITS
    else:
        letter = _AMBIGUOUS if per_second and capitals else _BYTES
    if per_second:
        words = {"bit": _BITS, "bits": _BITS, "bit/s": _BITS, "bits/s": _BITS}
        words |= {"byte/s": _BYTES, "bytes/s": _BYTES, "bps": letter, "b/s": letter}
    else:
        words = {"bit": _BITS, "bits": _BITS, "byte": _BYTES, "bytes": _BYTES, "b": letter}
    return words.get(lower)


def _read_unit(unit: str, *, per_second: bool) -> tuple[int, float, str, str, str] | None:
    """Split a size or rate unit into (prefix length, factor, canonical prefix, name, base)."""
    # Only ASCII spells a unit; checking so keeps the Rust twin's reading identical.
    if not unit.isascii():
        return None
    capitals = any(c.isalpha() for c in unit) and not any(c.islower() for c in unit)
    for prefix, factor, canonical, name in _PREFIXES:
        if unit[: len(prefix)].lower() != prefix:
            continue
        if per_second and prefix.endswith("i"):
            continue  # rates take decimal prefixes only
        base = _base(unit[len(prefix) :], per_second=per_second, capitals=capitals)
        if base is not None:
            return len(prefix), factor, canonical, name, base
    return None


_DURATION_FACTORS = {
    "": 1.0,
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "min": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "d": 86400.0,
}


def _split(text: str, what: str, forms: str) -> tuple[float, str]:
    """Split ``text`` into a finite number and a unit suffix (spaces allowed between them)."""
    value, _, unit = _split_number(text, what, forms)
    return value, unit


def _split_number(text: str, what: str, forms: str) -> tuple[float, str, str]:
    """As :func:`_split`, also handing back the number as written (for suggested spellings)."""
    match = re.fullmatch(rf"\s*({_NUMBER})\s*([^\d\s].*?)?\s*", str(text))
    if match is None:
        raise UnitError(f"cannot read {what} {text!r}: expected {forms}")
    value = float(match.group(1))
    if not math.isfinite(value):
        raise UnitError(f"cannot read {what} {text!r}: expected {forms}")
    return value, match.group(1), (match.group(2) or "")


def parse_size_bytes(text: str, *, allow_zero: bool = False) -> float:
    """Read a size in bytes: ``20.6MB`` → 20.6e6, ``2MiB`` → 2097152, ``1448`` → 1448.

    A size written in bits (``5Mb``, ``64kbit``) is refused with both readings named: sizes here
    are byte counts, and ``b`` for ``B`` is a typing slip far more often than a size meant in
    bits, so converting would hide an error eight times over.
    """
    value, number, unit = _split_number(text, "size", SIZE_FORMS)
    factor = 1.0
    if unit:
        read = _read_unit(unit, per_second=False)
        if read is None:
            raise UnitError(f"unknown size unit {unit!r} in {text!r}: expected {SIZE_FORMS}")
        _, factor, canonical, name, base = read
        if base != _BYTES:
            raise UnitError(
                f"size {text!r} is in {name}bits (b is a bit, B a byte): write "
                f"{number}{canonical}B for {number} {name}bytes, or the size in bytes: "
                f"expected {SIZE_FORMS}"
            )
    size = value * factor
    if size < 0 or (size == 0 and not allow_zero):
        raise UnitError(f"size {text!r} must be positive: expected {SIZE_FORMS}")
    return size


def parse_duration_s(text: str, *, allow_zero: bool = False) -> float:
    """Read a duration in seconds: ``250ms`` → 0.25, ``50min`` → 3000."""
    value, unit = _split(text, "duration", DURATION_FORMS)
    factor = _DURATION_FACTORS.get(unit if unit == "µs" else unit.lower())
    if factor is None:
        raise UnitError(f"unknown time unit {unit!r} in {text!r}: expected {DURATION_FORMS}")
    duration = value * factor
    if duration < 0 or (duration == 0 and not allow_zero):
        raise UnitError(f"duration {text!r} must be positive: expected {DURATION_FORMS}")
    return duration


def parse_event_rate_per_s(text: str, *, allow_zero: bool = True) -> float:
    """Read an event rate in events per second: ``1/50min`` → 1/3000, ``0.02/min`` → 1/3000.

    ``N/<duration>`` means N events per that duration, so ``1/50min`` is one event every fifty
    minutes, as seed 000 writes call-drop rates (Table 5.3). A bare number is per second.
    """
    raw = str(text).strip()
    if "/" in raw:
        count_text, _, period_text = raw.partition("/")
        try:
            count = float(count_text) if count_text.strip() else 1.0
            # "0.02/min" has no number before the unit: one such period.
            bare = re.fullmatch(r"\s*([^\d\s.+-].*?)\s*", period_text)
            period = (1.0, bare.group(1)) if bare else _split(period_text, "rate", EVENT_RATE_FORMS)
        except (ValueError, UnitError):
            raise UnitError(f"cannot read rate {text!r}: expected {EVENT_RATE_FORMS}") from None
        number, unit = period
        factor = _DURATION_FACTORS.get(unit.lower())
        if factor is None or number <= 0 or not math.isfinite(count):
            raise UnitError(f"cannot read rate {text!r}: expected {EVENT_RATE_FORMS}")
        rate = count / (number * factor)
    else:
        rate, unit = _split(raw, "rate", EVENT_RATE_FORMS)
        if unit not in ("", "/s", "hz", "Hz"):
            raise UnitError(f"unknown rate unit {unit!r} in {text!r}: expected {EVENT_RATE_FORMS}")
    if rate < 0 or (rate == 0 and not allow_zero):
        raise UnitError(f"rate {text!r} must be positive: expected {EVENT_RATE_FORMS}")
    return rate


def parse_bitrate_bps(text: str) -> float:
    """Read a rate in bit/s: ``2400bps`` → 2400, ``1.5Mbps`` → 1.5e6, ``2MBps`` → 16e6.

    ``b`` is a bit and ``B`` a byte (bytes per second count eight times); ``BPS`` in capitals
    could be either and is refused, naming both. A bare number is not a rate.
    """
    value, number, unit = _split_number(text, "bit rate", BITRATE_FORMS)
    read = _read_unit(unit, per_second=True)
    if read is None:
        raise UnitError(f"unknown bit-rate unit {unit!r} in {text!r}: expected {BITRATE_FORMS}")
    prefix_len, factor, _, name, base = read
    if base == _AMBIGUOUS:
        prefix = unit[:prefix_len]  # as written: in capitals, like the rest of the unit
        raise UnitError(
            f"bit rate {text!r} is ambiguous (in capitals B may be a bit or a byte): write "
            f"{number}{prefix}bps for {name}bits or {number}{prefix}Bps for {name}bytes per "
            f"second: expected {BITRATE_FORMS}"
        )
    rate = value * (factor * 8.0 if base == _BYTES else factor)
    if rate <= 0:
        raise UnitError(f"bit rate {text!r} must be positive: expected {BITRATE_FORMS}")
    return rate


def parse_probability(text: str) -> float:
    """Read a probability in (0, 1): ``5e-4`` → 0.0005, ``0.05%`` → 0.0005."""
    value, unit = _split(text, "probability", PROBABILITY_FORMS)
    if unit == "%":
        value /= 100.0
    elif unit:
        raise UnitError(f"cannot read probability {text!r}: expected {PROBABILITY_FORMS}")
    if not 0.0 < value < 1.0:
        raise UnitError(f"probability {text!r} is outside (0, 1): expected {PROBABILITY_FORMS}")
    return value


def parse_error_rate(text: str) -> float:
    """Read a packet error rate in [0, 1) (``--loss`` of a run): ``0.01``, ``1%``; 0 is no loss."""
    try:
        value = float(text.removesuffix("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise UnitError(f"cannot read {text!r}: expected {ERROR_RATE_FORMS}") from None
    if not 0 <= value < 1:
        raise UnitError(f"{text!r} is outside [0, 1): expected {ERROR_RATE_FORMS}")
    return value


def parse_count(text: str, *, minimum: int = 1) -> int:
    """Read a whole number no smaller than ``minimum``."""
    try:
        value = int(str(text).strip())
    except ValueError:
        raise UnitError(f"cannot read {text!r}: expected a whole number >= {minimum}") from None
    if value < minimum:
        raise UnitError(f"{text!r} is too small: expected a whole number >= {minimum}")
    return value
