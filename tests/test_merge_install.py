"""`install-merge-driver` / `uninstall-merge-driver`: idempotent, and exactly reversible."""

from __future__ import annotations

from pathlib import Path

from conftest import git, run_cli
from helpers_merge import install_driver

from echoes_lint.merge import ATTRIBUTES_LINE
from echoes_lint.merge.install import driver_command

DRIVER = driver_command()


def config_value(repo: Path, key: str, scope: str = "--local") -> str:
    return git(repo, "config", scope, "--get", key).rstrip("\n")


def snapshot(*paths: Path) -> list[bytes | None]:
    return [path.read_bytes() if path.exists() else None for path in paths]


def test_install_writes_the_driver_config_and_the_attribute_line(git_repo: Path) -> None:
    completed = run_cli("install-merge-driver", cwd=git_repo)
    assert completed.returncode == 0, completed.stderr
    assert config_value(git_repo, "merge.echoes-vault.driver") == DRIVER
    assert config_value(git_repo, "merge.echoes-vault.name") == \
        "EchoesVault page merge driver (echoes-lint)"
    assert (git_repo / ".gitattributes").read_text() == f"{ATTRIBUTES_LINE}\n"
    assert git(git_repo, "check-attr", "merge", "--", "EchoesVault/pages/a.md") == \
        "EchoesVault/pages/a.md: merge: echoes-vault\n"
    assert git(git_repo, "check-attr", "merge", "--", "EchoesVault/daily/x/a.md") == \
        "EchoesVault/daily/x/a.md: merge: unspecified\n"


def test_installing_twice_changes_nothing(git_repo: Path) -> None:
    (git_repo / ".gitattributes").write_text("*.png binary\n")
    install_driver(git_repo)
    files = (git_repo / ".git" / "config", git_repo / ".gitattributes")
    before = snapshot(*files)
    completed = run_cli("install-merge-driver", cwd=git_repo)
    assert completed.returncode == 0
    assert snapshot(*files) == before
    assert completed.stdout.count("already") == 3
    assert (git_repo / ".gitattributes").read_text() == f"*.png binary\n{ATTRIBUTES_LINE}\n"


def test_uninstall_restores_the_previous_config_and_attributes(git_repo: Path) -> None:
    git(git_repo, "config", "merge.other.driver", "other-tool %A")
    # No final newline: the restored file must not gain one.
    (git_repo / ".gitattributes").write_text("*.png binary\n*.md text")
    files = (git_repo / ".git" / "config", git_repo / ".gitattributes")
    before = snapshot(*files)
    install_driver(git_repo)
    assert snapshot(*files) != before
    completed = run_cli("uninstall-merge-driver", cwd=git_repo)
    assert completed.returncode == 0, completed.stderr
    assert snapshot(*files) == before
    assert "removed" in completed.stdout


def test_uninstall_deletes_an_attributes_file_it_created(git_repo: Path) -> None:
    before = snapshot(git_repo / ".git" / "config")
    install_driver(git_repo)
    assert run_cli("uninstall-merge-driver", cwd=git_repo).returncode == 0
    assert not (git_repo / ".gitattributes").exists()
    assert snapshot(git_repo / ".git" / "config") == before


def test_a_committed_attribute_line_is_not_removed_by_uninstall(git_repo: Path) -> None:
    (git_repo / ".gitattributes").write_text(f"{ATTRIBUTES_LINE}\n")
    git(git_repo, "add", ".gitattributes")
    git(git_repo, "commit", "-q", "-m", "team attributes")
    install_driver(git_repo)
    assert run_cli("uninstall-merge-driver", cwd=git_repo).returncode == 0
    assert (git_repo / ".gitattributes").read_text() == f"{ATTRIBUTES_LINE}\n"
    assert git(git_repo, "status", "--porcelain") == ""
    assert git(git_repo, "config", "--local", "--get-regexp", "^merge\\.", check=False) == ""


def test_local_attributes_go_to_the_git_info_attributes_file(git_repo: Path) -> None:
    info = git_repo / ".git" / "info" / "attributes"
    before = snapshot(info)
    install_driver(git_repo, "--local-attributes")
    assert not (git_repo / ".gitattributes").exists()
    assert info.read_text().endswith(f"{ATTRIBUTES_LINE}\n")
    assert git(git_repo, "check-attr", "merge", "--", "EchoesVault/pages/a.md").endswith(
        ": echoes-vault\n")
    assert run_cli("uninstall-merge-driver", cwd=git_repo).returncode == 0
    assert snapshot(info) == before


def test_global_install_writes_the_user_config_and_uninstall_removes_it(git_repo: Path) -> None:
    user_config = Path.home() / ".gitconfig"
    user_config.write_text("[user]\n\tname = Someone\n")
    before = snapshot(user_config, git_repo / ".git" / "config")
    install_driver(git_repo, "--global")
    assert config_value(git_repo, "merge.echoes-vault.driver", "--global") == DRIVER
    assert git(git_repo, "config", "--local", "--get", "merge.echoes-vault.driver",
               check=False) == ""
    assert run_cli("uninstall-merge-driver", "--global", cwd=git_repo).returncode == 0
    assert snapshot(user_config, git_repo / ".git" / "config") == before
    assert not (git_repo / ".gitattributes").exists()


def test_a_foreign_driver_under_our_name_is_never_overwritten(git_repo: Path) -> None:
    git(git_repo, "config", "merge.echoes-vault.driver", "my-own-tool %A %B")
    completed = run_cli("install-merge-driver", cwd=git_repo)
    assert completed.returncode == 2
    assert "not echoes-lint's driver" in completed.stderr
    assert config_value(git_repo, "merge.echoes-vault.driver") == "my-own-tool %A %B"
    assert not (git_repo / ".gitattributes").exists()
    completed = run_cli("uninstall-merge-driver", cwd=git_repo)
    assert completed.returncode == 0
    assert config_value(git_repo, "merge.echoes-vault.driver") == "my-own-tool %A %B"


def test_outside_a_repository_install_is_a_usage_error(tmp_path: Path) -> None:
    completed = run_cli("install-merge-driver", cwd=tmp_path)
    assert completed.returncode == 2
    assert "not inside a Git work tree" in completed.stderr
    assert "Traceback" not in completed.stderr
