"""Type stubs of the Rust extension ``farlink._core``."""

__version__: str

def build_info() -> tuple[str, str]:
    """The core's version and its build profile (``"release"`` or ``"debug"``)."""
