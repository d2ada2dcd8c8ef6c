"""The ``pyfy-fuzz`` command line: argument checks, error messages, output."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import torch

from pyfy_fuzz import __version__, cli
from pyfy_fuzz.cli import pythonify as cli_pythonify

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "mutate_view.py"
EXAMPLE_INPUTS = REPO / "examples" / "mutate_view_inputs.pt"

TARGET_SOURCE = """
import torch

def f(x, y):
    return x + y

class Net(torch.nn.Module):
    def forward(self, x, y):
        return x * y

net = Net()
not_callable = 3
"""


def _real_pythonify_available() -> bool:
    try:
        from pyfy_fuzz.pythonify import pythonify  # noqa: F401
    except ImportError:
        return False
    return True


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_usage_error(result: tuple[int, str, str], *fragments: str) -> None:
    rc, out, err = result
    assert rc == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("pyfy-fuzz: error: ")
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "target.py"
    path.write_text(TARGET_SOURCE)
    return path


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    path = tmp_path / "inputs.pt"
    torch.save((torch.randn(2, 3), torch.randn(2, 3)), path)
    return path


class FakePythonify:
    """Stands in for ``pyfy_fuzz.pythonify`` so the CLI is tested on its own."""

    def __init__(self) -> None:
        self.unsupported = type("PythonifyUnsupported", (Exception,), {})
        self.module = types.ModuleType("pyfy_fuzz.pythonify")
        self.module.__dict__.update(PythonifyUnsupported=self.unsupported, pythonify=self.pythonify)
        self.calls: list[tuple[Any, tuple[Any, ...], Path, dict[str, Any]]] = []
        self.raises: Exception | None = None

    def pythonify(self, fn: Any, args: tuple[Any, ...], out_path: Path, **kwargs: Any) -> Any:
        self.calls.append((fn, args, out_path, kwargs))
        if self.raises is not None:
            raise self.raises
        return types.SimpleNamespace(
            path=out_path, active_wrappers=["RuntimeWrapper", "AOTDispatchAutograd"]
        )


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakePythonify:
    fake = FakePythonify()
    monkeypatch.setitem(sys.modules, "pyfy_fuzz.pythonify", fake.module)
    return fake


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"pyfy-fuzz {__version__}"


def test_pythonify_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["pythonify", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for option in ("FILE.py:NAME", "--inputs", "--output", "--backend", "--frontend", "--dynamic"):
        assert option in out


def test_no_command_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main([])
    assert exc.value.code == 2


def test_python_dash_m_runs_the_cli() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pyfy_fuzz", "--version"], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"pyfy-fuzz {__version__}"


@pytest.mark.parametrize("spec", ["target.py", "target.py:", ":f", "target.py:not-a-name"])
def test_bad_target_syntax(
    capsys: pytest.CaptureFixture[str], inputs: Path, tmp_path: Path, spec: str
) -> None:
    result = run(capsys, "pythonify", spec, "--inputs", inputs, "-o", tmp_path / "out.py")
    assert_usage_error(result, "expected FILE.py:NAME", repr(spec))


def test_missing_file(capsys: pytest.CaptureFixture[str], inputs: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.py"
    result = run(capsys, "pythonify", f"{missing}:f", "--inputs", inputs, "-o", tmp_path / "o.py")
    assert_usage_error(result, "no such file", str(missing))


def test_missing_attribute(
    capsys: pytest.CaptureFixture[str], target: Path, inputs: Path, tmp_path: Path
) -> None:
    result = run(capsys, "pythonify", f"{target}:g", "--inputs", inputs, "-o", tmp_path / "o.py")
    assert_usage_error(result, "has no attribute 'g'")


def test_not_callable(
    capsys: pytest.CaptureFixture[str], target: Path, inputs: Path, tmp_path: Path
) -> None:
    spec = f"{target}:not_callable"
    result = run(capsys, "pythonify", spec, "--inputs", inputs, "-o", tmp_path / "o.py")
    assert_usage_error(result, "to be callable, got int")


def test_module_class_is_rejected(
    capsys: pytest.CaptureFixture[str], target: Path, inputs: Path, tmp_path: Path
) -> None:
    result = run(capsys, "pythonify", f"{target}:Net", "--inputs", inputs, "-o", tmp_path / "o.py")
    assert_usage_error(result, "nn.Module class", "instance")


def test_target_that_fails_to_import(
    capsys: pytest.CaptureFixture[str], inputs: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    result = run(capsys, "pythonify", f"{broken}:f", "--inputs", inputs, "-o", tmp_path / "o.py")
    assert_usage_error(result, "importing", "RuntimeError: boom")


def test_target_not_a_python_file(
    capsys: pytest.CaptureFixture[str], inputs: Path, tmp_path: Path
) -> None:
    text = tmp_path / "target.txt"
    text.write_text("def f(x):\n    return x\n")
    result = run(capsys, "pythonify", f"{text}:f", "--inputs", inputs, "-o", tmp_path / "o.py")
    assert_usage_error(result, "expected a Python source file")


def test_inputs_missing(capsys: pytest.CaptureFixture[str], target: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.pt"
    result = run(capsys, "pythonify", f"{target}:f", "--inputs", missing, "-o", tmp_path / "o.py")
    assert_usage_error(result, "no such inputs file", str(missing))


def test_inputs_corrupt(capsys: pytest.CaptureFixture[str], target: Path, tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"\x00not a torch file\xff" * 8)
    result = run(capsys, "pythonify", f"{target}:f", "--inputs", corrupt, "-o", tmp_path / "o.py")
    assert_usage_error(result, "cannot load inputs from", str(corrupt))


def test_inputs_not_a_tuple(
    capsys: pytest.CaptureFixture[str], target: Path, tmp_path: Path
) -> None:
    single = tmp_path / "single.pt"
    torch.save(torch.randn(3), single)
    result = run(capsys, "pythonify", f"{target}:f", "--inputs", single, "-o", tmp_path / "o.py")
    assert_usage_error(result, "to hold a tuple of inputs, got Tensor")


def test_output_directory_missing(
    capsys: pytest.CaptureFixture[str], target: Path, inputs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "no" / "such" / "dir" / "o.py"
    result = run(capsys, "pythonify", f"{target}:f", "--inputs", inputs, "-o", out)
    assert_usage_error(result, "output directory does not exist")
    assert not out.parent.exists()


def test_output_is_a_directory(
    capsys: pytest.CaptureFixture[str], target: Path, inputs: Path, tmp_path: Path
) -> None:
    result = run(capsys, "pythonify", f"{target}:f", "--inputs", inputs, "-o", tmp_path)
    assert_usage_error(result, "output path is a directory")


def test_output_directory_not_writable(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    target: Path,
    inputs: Path,
    tmp_path: Path,
) -> None:
    # Root ignores permission bits, so make the check itself say no.
    monkeypatch.setattr(cli_pythonify.os, "access", lambda path, mode: False)
    out = tmp_path / "o.py"
    result = run(capsys, "pythonify", f"{target}:f", "--inputs", inputs, "-o", out)
    assert_usage_error(result, "output directory is not writable")


def test_arguments_reach_pythonify(
    capsys: pytest.CaptureFixture[str], fake: FakePythonify, target: Path, tmp_path: Path
) -> None:
    as_list = tmp_path / "list.pt"
    torch.save([torch.ones(2), torch.zeros(2)], as_list)
    out = tmp_path / "o.py"
    argv: list[str | Path] = ["pythonify", f"{target}:net", "--inputs", as_list, "-o", out]
    rc, stdout, err = run(capsys, *argv, "--backend", "inductor", "--frontend", "aot", "--dynamic")
    assert (rc, err) == (0, "")
    [(fn, args, out_path, kwargs)] = fake.calls
    assert isinstance(fn, torch.nn.Module)
    assert isinstance(args, tuple) and len(args) == 2
    assert out_path == out
    assert kwargs == {"backend": "inductor", "frontend": "aot", "dynamic": True, "mode": None}
    assert stdout.splitlines() == [
        f"wrote {out}",
        "active wrappers:",
        "  RuntimeWrapper",
        "  AOTDispatchAutograd",
    ]
    assert not out.exists()  # the CLI never writes the output itself


def test_defaults_reach_pythonify(
    capsys: pytest.CaptureFixture[str],
    fake: FakePythonify,
    target: Path,
    inputs: Path,
    tmp_path: Path,
) -> None:
    rc, _, _ = run(capsys, "pythonify", f"{target}:f", "--inputs", inputs, "-o", tmp_path / "o.py")
    assert rc == 0
    [(_, _, _, kwargs)] = fake.calls
    assert kwargs == {"backend": "aot_eager", "frontend": "dynamo", "dynamic": False, "mode": None}


@pytest.mark.parametrize("kind", ["PythonifyUnsupported", "ValueError", "TypeError"])
def test_pythonify_errors_are_reported(
    capsys: pytest.CaptureFixture[str],
    fake: FakePythonify,
    target: Path,
    inputs: Path,
    tmp_path: Path,
    kind: str,
) -> None:
    exc_type = fake.unsupported if kind == "PythonifyUnsupported" else eval(kind)
    fake.raises = exc_type("cannot model this")
    out = tmp_path / "o.py"
    result = run(capsys, "pythonify", f"{target}:f", "--inputs", inputs, "-o", out)
    assert_usage_error(result, f"{kind}: cannot model this")
    assert not out.exists()


@pytest.mark.skipif(not _real_pythonify_available(), reason="needs pyfy_fuzz.pythonify")
def test_pythonify_example(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "f_pythonified.py"
    rc, stdout, err = run(
        capsys, "pythonify", f"{EXAMPLE}:f", "--inputs", EXAMPLE_INPUTS, "-o", out
    )
    assert rc == 0, err
    assert out.is_file()
    assert "RuntimeWrapper" in stdout.split()
