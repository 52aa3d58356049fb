"""The node runtime's user-facing defaults, in a module that imports nothing: the command line
shows them in its help without importing the Matter stack (start-up time)."""

MATTER_PORT = 5540   # the spec's UDP port for operational Matter messages
DEFAULT_BASE_PORT = MATTER_PORT   # the first node on Matter's port, the others above it
#: `--open-windows` keywords; anything else is a list of node ids.
WINDOW_CHOICES = ("all", "all-qr", "none")
DEFAULT_WINDOW_TIMEOUT_S = 900   # the spec's longest commissioning timeout (15 min)
