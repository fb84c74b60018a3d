"""Regenerate the explorer's generated static files in workbench/explore/static/.

- specs.json: the live chart specs (charts.live_specs()), so the explorer's kernel never has to
  import altair (which takes seconds) to show a page; tests/explore/test_explorer.py checks it is current.
- vega-bundle.js (with --vega): vega, vega-lite and vega-embed as one ES module, bundled offline
  by the vl-convert-python wheel (see workbench/explore/static/README.md). Rebuild it when vl-convert or
  altair's vega-lite version changes.

Usage: python scripts/build_static.py [--vega]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "workbench" / "explore" / "static"


def specs_text() -> str:
    from workbench.dsgc.charts import live_specs

    return json.dumps(live_specs(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def vega_bundle() -> str:
    from importlib.metadata import version

    import vl_convert as vlc
    from altair.utils._importers import vl_version_for_vl_convert

    vl = vl_version_for_vl_convert()
    head = (
        f"// vega + vega-lite ({vl}) + vega-embed, bundled by vl-convert-python "
        f"{version('vl-convert-python')} (vl_convert.javascript_bundle); see README.md\n"
    )
    return head + vlc.javascript_bundle("export { vegaEmbed, vega, vegaLite };", vl_version=vl)


def main(argv: list[str]) -> int:
    from workbench.common.io import atomic_write_text

    atomic_write_text(STATIC / "specs.json", specs_text())
    print("wrote workbench/explore/static/specs.json")
    if "--vega" in argv:
        atomic_write_text(STATIC / "vega-bundle.js", vega_bundle())
        print("wrote workbench/explore/static/vega-bundle.js")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
