"""The proof that git's listing of the paths alone holds no gitlink: trusted only for the index
file git read (an index replaced before or after git lists is not), defeated only by what could
really be a gitlink in the listing's scope or an extension that adds entries (a submodule
outside the vault, or a folder whose name holds `link`, keeps the paths alone), and, where it
fails, the listing with the modes starts before the hook's imports."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, init_repo, make_vault
from helpers_check import PAGES, commit, page, vault_repo, write
from test_hook9_gitlinks import FOUND, MODE, SUB, add_gitlink, hook, index_bytes, logging_git, with_modes
from test_hook_listing import HOOK, staged_collision

from echoes_lint import gitindex


def swapping_git(tmp_path: Path, repo: Path, replacement: Path,
                 after: bool) -> tuple[dict[str, str], Path]:
    """The environment of a hook whose `git` logs each command line and, at the listing of the
    paths alone, renames `replacement` over the index as git does: before git lists, or (`after`)
    once it has listed; `rev-parse` then waits for that rename, so the index is checked after it
    whenever the hook checks it after git's listing."""
    real = shutil.which("git")
    assert real is not None
    folder, log, done = tmp_path / "bin", tmp_path / "git.log", tmp_path / "swapped"
    folder.mkdir()
    index = repo / ".git" / "index"
    swap = (f"mv {shlex.quote(str(replacement))} {shlex.quote(str(index))}; "
            f": > {shlex.quote(str(done))}")
    paths_only = 'case "$*" in *" ls-files "*--format*) ;; *" ls-files "*) { '
    run = (f'{paths_only}"{real}" "$@"; status=$?; {swap}; exit $status; }};; esac\n' if after
           else f'{paths_only}{swap}; }};; esac\n')
    wait = (f'case "$*" in *" rev-parse "*) i=0; while [ ! -e {shlex.quote(str(done))} ] '
            f'&& [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done;; esac\n')
    (folder / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(log))}\n'
                                f'{run}{wait}exec {shlex.quote(real)} "$@"\n', encoding="utf-8")
    (folder / "git").chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}, log


@pytest.mark.parametrize("after", [False, True])
def test_an_index_replaced_around_the_listing_is_not_trusted(tmp_path: Path, after: bool) -> None:
    """Git renames a new index, which holds a gitlink, over the proved one while the hook runs
    (an IDE's `git add` beside a plain `git commit`, which runs hooks on the real index without
    its lock). Before git lists: the file proved is not the one git read (which lists the
    gitlink as a path). After git listed: the file at the path is no longer the one proved.
    Either way the proof is not trusted, the modes are listed, and the gitlink is reported."""
    repo = vault_repo(tmp_path / "repo")
    clean = tmp_path / "clean-index"
    shutil.copyfile(repo / ".git" / "index", clean)
    add_gitlink(repo)
    linked = tmp_path / "linked-index"
    shutil.copyfile(repo / ".git" / "index", linked)
    shutil.copyfile(clean, repo / ".git" / "index")  # proved; the gitlink's renamed over it
    env, log = swapping_git(tmp_path, repo, linked, after)
    run = hook(repo, env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert FOUND in run.stdout
    assert with_modes(log)
    assert MODE in index_bytes(repo)  # the rename took place


def test_an_index_git_does_not_name_proves_nothing(tmp_path: Path) -> None:
    """The hook proves `.git/index` before git names the index it reads; when git names
    another, the modes are listed."""
    real = shutil.which("git")
    assert real is not None
    repo = vault_repo(tmp_path / "repo")
    staged_collision(repo)
    folder, log = tmp_path / "bin", tmp_path / "git.log"
    folder.mkdir()
    (folder / "git").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(log))}\n'
        'case "$*" in *" rev-parse --git-path index"*) echo .git/other-index; exit 0;; esac\n'
        f'exec {shlex.quote(real)} "$@"\n', encoding="utf-8")
    (folder / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    run = hook(repo, env, f"{PAGES}/Home.md")
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"{PAGES}/Home.md:1:1: EV030 new file" in run.stdout
    assert with_modes(log)


def test_a_submodule_outside_the_vault_and_a_folder_named_linked_keep_the_paths_alone(
        tmp_path: Path) -> None:
    """A gitlink's mode field (of a submodule outside the listing's scope) and `link`/`sdir`
    in folder names (the `TREE` extension lists them) are no reason to list the modes (before:
    each defeated the proof); the hook finds what it finds with them."""
    repo = vault_repo(tmp_path / "repo")
    write(repo, "linked/sdir/notes.txt", "notes\n")
    commit(repo, "linked")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},vendor/sub")
    git(repo, "commit", "-q", "--no-verify", "-m", "submodule")
    staged_collision(repo)
    git(repo, "write-tree")  # the `TREE` extension whole: every folder's name
    index = index_bytes(repo)
    assert MODE in index and b"linked\0" in index and b"sdir\0" in index
    env, log = logging_git(tmp_path)
    run = hook(repo, env, f"{PAGES}/Home.md")
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"{PAGES}/Home.md:1:1: EV030 new file" in run.stdout
    assert not with_modes(log), log.read_text(encoding="utf-8")


def test_the_listing_with_the_modes_starts_before_the_imports(tmp_path: Path) -> None:
    """Where the index proves nothing (a gitlink in the vault), the hook starts the listing with
    the modes where it starts the listing (before: after its imports, once the proof failed):
    it costs what the listing always cost."""
    repo = vault_repo(tmp_path / "repo")
    add_gitlink(repo)
    spy = ("import sys\n"
           "from echoes_lint import gitindex, precommit\n"
           "started, start = [], gitindex._start\n"
           "def spied(folder, args):\n"
           "    started.append((args == gitindex.LS_FILES, 'echoes_lint.check' in sys.modules))\n"
           "    return start(folder, args)\n"
           "gitindex._start = spied\n"
           f"status = precommit.lint_main([{PAGES + '/home.md'!r}])\n"
           "print(status, started)\n")
    run = subprocess.run([sys.executable, "-c", spy], cwd=repo, capture_output=True, text=True,
                         check=False, timeout=120)
    assert FOUND in run.stdout, run.stdout + run.stderr
    status, started = run.stdout.splitlines()[-1].split(" ", 1)
    assert status == "1"
    assert "(True, False)" in started and "(True, True)" not in started, started


SHA1 = 20


def entry(path: bytes, mode: bytes = MODE, size: int = SHA1, extended: bool = False) -> bytes:
    """An index entry (versions 2 and 3): 24 bytes of status, the mode, 12 more, the object
    id, the flags (the name's length; 2 more bytes when `extended`), the path, NULs to 8."""
    flags = min(len(path), 0xFFF) | (0x4000 if extended else 0)
    head = bytes(24) + mode + bytes(12) + bytes(size) + flags.to_bytes(2, "big") \
        + (bytes(2) if extended else b"") + path
    return head + bytes(8 - len(head) % 8)


def index_of(*entries: bytes, extensions: bytes = b"", version: int = 2, size: int = SHA1) -> bytes:
    return (b"DIRC" + version.to_bytes(4, "big") + len(entries).to_bytes(4, "big")
            + b"".join(entries) + extensions + b"\x11" * size)


def extension(signature: bytes, data: bytes) -> bytes:
    return signature + len(data).to_bytes(4, "big") + data


TREE_LINKED = extension(b"TREE", b"\0-1 1\nlinked\0-1 0\nsdir\0-1 0\n")


@pytest.mark.parametrize(("index", "proven"), [
    (index_of(entry(SUB.encode())), False),
    (index_of(entry(SUB.encode(), size=32), size=32), False),  # SHA-256
    (index_of(entry(SUB.encode(), extended=True), version=3), False),
    (index_of(entry(b"EchoesVault")), False),
    (index_of(entry(b"echoesvault/Sub")), False),  # `GIT_ICASE_PATHSPECS`
    (index_of(entry(b".echoes-vault/state.json/x")), False),
    (index_of(entry(b".echoes-vault")), False),  # above a pathspec
    (index_of(entry(b"EchoesVault/" + b"a" * 5000)), False),  # a name too long for its field
    (index_of(entry(SUB.encode()), version=4), False),  # version 4: any mode field found
    (index_of(entry(b"docs/" + SUB.encode())), False),  # a vault in `docs/`: git runs there
    (index_of(entry(b"vendor/sub")), True),  # outside the scope
    (index_of(entry(b"EchoesVaultX/sub")), True),
    (index_of(entry(b"a"), entry(b"EchoesVault/a", mode=b"\0\0\x81\xa4")), True),
    # The gitlink mode's bytes in a size field: no entry can sit there.
    (index_of(entry(b"EchoesVault/a", mode=b"\0\0\x81\xa4")[:36] + MODE
              + entry(b"EchoesVault/a", mode=b"\0\0\x81\xa4")[40:]), True),
    (index_of(entry(b"a"), extensions=TREE_LINKED), True),
    (index_of(entry(b"a"), extensions=extension(b"link", bytes(20))), False),
    (index_of(entry(b"a"), extensions=TREE_LINKED + extension(b"sdir", b"")), False),
    (index_of(entry(b"a"), extensions=extension(b"sdir", b"") + TREE_LINKED), False),
    (index_of(entry(b"a"), extensions=extension(b"link", bytes(32)), size=32), False),
    (index_of(entry(b"a"), extensions=b"link" + (2**32 - 1).to_bytes(4, "big")), True),
])
def test_the_proof_rejects_only_what_could_be_real(index: bytes, proven: bool) -> None:
    assert gitindex._proven(index) is proven


class _Counted:
    """Bytes that count the reads made of them."""

    def __init__(self, data: bytes) -> None:
        self.data, self.reads = data, 0

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, key: slice) -> bytes:
        self.reads += 1
        return self.data[key]


def test_the_extension_chains_are_walked_once() -> None:
    """A `TREE` extension packed with `link`s, each whose size leads to the next: none lands on
    the checksum, and each position is walked once over all of them (linear; walked from each
    `link` anew, 2,000 of them would take 2,000,000 reads)."""
    names = b"".join(b"link" + (8 * 0).to_bytes(4, "big") for _ in range(2000))
    data = index_of(entry(b"a"), extensions=extension(b"TREE", names) + b"x")
    assert gitindex._proven(data)
    found = [at for at in range(len(data)) if data.startswith(b"link", at)]
    counted, chains = _Counted(data), {}  # type: ignore[var-annotated]
    assert len(found) == 2000
    assert not any(gitindex._extension_at(counted, at, chains) for at in found)  # type: ignore[arg-type]
    assert counted.reads <= len(found) + 2


def test_a_gitlink_in_a_vault_in_a_subfolder_is_found_with_an_absolute_index_file(
        tmp_path: Path) -> None:
    """`git commit -a`, `git commit <paths>` and any commit in a linked worktree name their index
    to the hook by an absolute `GIT_INDEX_FILE`, which git names back from any folder. The
    hook of a vault in `docs/` lists in `docs/`, whose pathspec is relative to it while the index
    holds paths from the top: the gitlink at `docs/EchoesVault/assets/sub` defeats the proof
    (before: out of scope, the paths alone listed and EV046 lost)."""
    repo = init_repo(tmp_path / "repo")
    docs = repo / "docs"
    docs.mkdir()
    make_vault(docs)
    write(docs, f"{PAGES}/home.md", page(summary="Start here."))
    commit(repo, "vault")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},docs/{SUB}")
    env, log = logging_git(tmp_path)
    env["GIT_INDEX_FILE"] = str(repo / ".git" / "index")
    run = subprocess.run([HOOK, "--vault-dir", "docs/EchoesVault", f"docs/{PAGES}/home.md"],
                         cwd=repo, capture_output=True, text=True, check=False, timeout=120,
                         env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"docs/{FOUND}" in run.stdout
    assert with_modes(log)


def test_a_listing_with_the_modes_of_the_common_index_is_not_decoded(tmp_path: Path) -> None:
    """Where the proof fails though the vault holds no gitlink (a version 4 index and a
    submodule elsewhere), the listing with the modes becomes the common listing's bytes with the
    modes cut out (before: decoded and split into a string per path), and the hook finds what
    it found (a staged capital twin)."""
    repo = vault_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},vendor/sub")
    git(repo, "commit", "-q", "--no-verify", "-m", "submodule")
    git(repo, "update-index", "--index-version", "4")
    staged_collision(repo)
    gitindex.discard()
    listing, cause = gitindex.output(repo)
    assert cause is None and isinstance(listing, gitindex.Written)
    assert bytes(listing.data).split(b"\0")[:-1] == [
        path.encode() for path in git(repo, "ls-files", "-z", "--", *gitindex.PATHSPEC).split("\0")[:-1]]
    env, log = logging_git(tmp_path)
    run = hook(repo, env, f"{PAGES}/Home.md")
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"{PAGES}/Home.md:1:1: EV030 new file" in run.stdout
    assert with_modes(log), log.read_text(encoding="utf-8")


@pytest.mark.parametrize("listing", [
    b"EchoesVault/a\x00100755\x00",  # not a regular file
    b"EchoesVault/sub\x00160000\x00",  # a gitlink
    "EchoesVault/\u00e9\x00100644\x00".encode(),  # not ASCII
])
def test_any_other_listing_with_the_modes_is_decoded(listing: bytes) -> None:
    assert gitindex._without_modes(listing) is None
    assert gitindex._without_modes(listing * 2 + b"EchoesVault/b\x00100644\x00") is None
