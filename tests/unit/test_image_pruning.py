"""Issue 56, defect 7: `make images` pruned every untagged image labelled io.ballast.image on the machine, and so the
images another checkout's build had just made or was standing on: a fresh clone's `make test` failed with "image not
known" beside another build. What the image targets would run (`make -n`, which runs nothing but make itself): every
build labels its images with this checkout's id and holds the image store's lock shared; every prune names that id
and holds the lock alone. tests/containers/test_compose.py checks the same on podman."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTAINERFILES = (ROOT / "deploy" / "Dockerfile", ROOT / "deploy" / "kafka" / "Containerfile",
                  ROOT / "deploy" / "prometheus" / "Containerfile")


def planned(target: str, cwd: Path = ROOT) -> list[str]:
    shown = subprocess.run(["make", "-n", "--no-print-directory", target], cwd=cwd, capture_output=True, text=True,
                           timeout=120, check=True)
    return [line for line in shown.stdout.replace("\\\n", " ").splitlines() if " podman " in f" {line} "]


def test_a_build_prunes_only_its_own_checkouts_images_and_never_while_another_builds() -> None:
    lines = planned("images")
    builds = [line for line in lines if " podman build " in line]
    prunes = [line for line in lines if re.search(r" podman (image prune|rmi|image rm) ", line)]
    assert len(builds) == 3 and len(prunes) == 3, lines  # ballast and ballast-spark (a loop), Kafka, Prometheus

    (checkout,) = {m[1] for line in builds for m in re.finditer(r"--build-arg BALLAST_CHECKOUT=(\S+)", line)}
    (lock,) = {re.search(r"flock --(?:shared|exclusive) (?:--wait \d+ )?(\S+) ", line)[1] for line in builds + prunes}
    for build in builds:
        assert f"flock --shared {lock} " in build and f"BALLAST_CHECKOUT={checkout} " in build, build
    for prune in prunes:
        assert re.search(rf"flock --exclusive (--wait \d+ )?{re.escape(lock)} ", prune), prune
        assert re.findall(r"--filter (\S+)", prune) == [f"label=io.ballast.checkout={checkout}"], prune


def test_another_checkout_labels_its_builds_with_another_id(tmp_path: Path) -> None:
    other = tmp_path / "other-checkout"
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(other)], check=True, timeout=120)
    (other / "Makefile").write_text((ROOT / "Makefile").read_text())
    ours = {m[1] for line in planned("image-prometheus") for m in re.finditer(r"BALLAST_CHECKOUT=(\S+)", line)}
    theirs = {m[1] for line in planned("image-prometheus", other) for m in re.finditer(r"BALLAST_CHECKOUT=(\S+)", line)}
    assert len(ours) == len(theirs) == 1 and ours != theirs


def test_every_image_carries_the_checkout_label_the_prune_names() -> None:
    """Without it in the image, the build argument would go unused and the prune would find nothing to remove."""
    for containerfile in CONTAINERFILES:
        final_stages = containerfile.read_text().split("\nFROM ")[1:]
        if containerfile.name == "Dockerfile":  # the stages `make image` tags
            final_stages = [s for s in final_stages if s.startswith(("spark-runtime AS ballast-spark\n",
                                                                     "python AS ballast\n"))]
        assert final_stages, containerfile
        for stage in final_stages:
            assert "\nARG BALLAST_CHECKOUT=\nLABEL io.ballast.checkout=${BALLAST_CHECKOUT}\n" in stage, containerfile
