"""The plugin's entry point: the Pulumi engine runs `python provider <engine address>` (provider/PulumiPlugin.yaml).

The provider prints the port of its gRPC server on stdout and serves until the
engine stops it. The repository root replaces this directory at the head of
sys.path (so provider/'s modules are imported as `provider.*`, never as
top-level `schema` or `host`), and the engine (`gpusizer`) and the components
(`components`) are this checkout's, whatever the virtualenv has installed.
"""

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]

from pulumi.provider import main  # noqa: E402  (after the path is set)

from provider import host  # noqa: E402

if __name__ == "__main__":
    main(host.GpusizerProvider(), sys.argv[1:])
