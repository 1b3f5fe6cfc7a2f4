"""lasthop: fast, faithful simulator of the Wi-Fi last hop (placeholder; full API follows)."""
from lasthop._lasthop import __version__
