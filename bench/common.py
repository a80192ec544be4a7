"""What the corpus benches share: their common arguments, the corpus
extracted once under /tmp/rowsearch-bench, and percentiles."""
import argparse
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = "/tmp/rowsearch-bench"


def arguments(**extra):
    """--corpus, --bin and the bench's own options (name -> (type, default))."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.path.join(HERE, "../../shared/corpus/mail.tar.zst"))
    ap.add_argument("--bin", default=os.path.join(HERE, "../target/release/rowsearch"))
    for name, (kind, default) in extra.items():
        ap.add_argument(f"--{name}", type=kind, default=default)
    return ap.parse_args()


def corpus(archive):
    """The corpus extracted once: the path of its `mail` tree."""
    root = os.path.join(WORK, "corpus")
    if not os.path.isdir(os.path.join(root, "mail")):
        os.makedirs(root, exist_ok=True)
        subprocess.run(["tar", "--zstd", "-xf", os.path.abspath(archive), "-C", root], check=True)
    return os.path.join(root, "mail")


def build_at(rev):
    """The release binary of git revision `rev`, from a worktree at
    /tmp/rowsearch-bench/before-REV, built when missing."""
    tree = os.path.join(WORK, f"before-{rev}")
    binary = os.path.join(tree, "target/release/rowsearch")
    if not os.path.exists(binary):
        if not os.path.isdir(tree):
            subprocess.run(["git", "-C", os.path.join(HERE, ".."), "worktree", "add", "--detach", tree, rev],
                           check=True)
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "rowsearch"], cwd=tree, check=True)
    return binary


def pct(xs, p):
    """The p-th quantile of xs (nearest rank)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round((len(xs) - 1) * p))]
