"""Write the fonts every figure is drawn with (workbench/common/fonts/), once.

The figures' bytes depend on the fonts vl-convert measures text with, so the package ships its
own: DejaVu Sans (Book and Bold) from Debian's fonts-dejavu-core, renamed "Workbench Sans" so
that no font a machine has can stand in for it under the same name (the Bitstream Vera licence
asks modified copies to be renamed; the family name is the only change). The TTFs are committed;
re-run this only to change them:

    python -m pip install fonttools && python scripts/build_fonts.py [--src /usr/share/fonts/truetype/dejavu]
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from fontTools.ttLib import TTFont

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "workbench" / "common" / "fonts"
FAMILY = "Workbench Sans"
STYLES = {"DejaVuSans.ttf": "Regular", "DejaVuSans-Bold.ttf": "Bold"}


def rename(src: Path, style: str, out: Path) -> None:
    font = TTFont(src, recalcTimestamp=False)
    full, ps = f"{FAMILY} {style}", f"{FAMILY.replace(' ', '')}-{style}"
    names = {1: FAMILY, 2: style, 3: f"{ps};from {src.name}", 4: full, 6: ps, 16: FAMILY, 17: style}
    table = font["name"]
    for rec in list(table.names):
        if rec.nameID in names:
            table.setName(names[rec.nameID], rec.nameID, rec.platformID, rec.platEncID, rec.langID)
    font.save(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default="/usr/share/fonts/truetype/dejavu")
    ap.add_argument("--license", default="/usr/share/doc/fonts-dejavu-core/copyright")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for name, style in STYLES.items():
        out = OUT / f"{FAMILY.replace(' ', '')}-{style}.ttf"
        rename(Path(args.src) / name, style, out)
        print(f"wrote {out.relative_to(ROOT)}")
    shutil.copy(args.license, OUT / "LICENSE")
    print(f"wrote {(OUT / 'LICENSE').relative_to(ROOT)}")


if __name__ == "__main__":
    main()
