"""The API reference documents what a user reaches (issue #67, item 16): every public name of the
package and of the modules the gallery uses, every public method of a class (those it inherits
from scikit-learn and Optuna too), and no private function presented as the API; the other pages
a new user reads install what they say and trace their figures to the measurement log."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from pathlib import Path
import re

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
API = DOCS / "api.rst"
#: Pages written for users (the architecture notes and the measurement log are for developers).
USER_PAGES = [
    ROOT / "README.md",
    DOCS / "index.md",
    DOCS / "tutorial.md",
    DOCS / "performance.md",
    *sorted((DOCS / "guide").glob("*.md")),
]


def listed_by_module() -> dict[str, set[str]]:
    """The names of each ``.. autosummary::`` of docs/api.rst, by the module current there."""
    listed: dict[str, set[str]] = {}
    module, in_autosummary = None, False
    for line in API.read_text(encoding="utf-8").splitlines():
        current = re.fullmatch(r"\.\. (?:current)?module:: (\S+)", line)
        if current:
            module = current[1]
        elif line.startswith(".. autosummary::"):
            in_autosummary = True
        elif in_autosummary and line.strip() and not line.startswith(" "):
            in_autosummary = False
        elif in_autosummary and re.fullmatch(r"   [\w.]+", line):
            listed.setdefault(module, set()).add(line.strip())
    return listed


def documented_modules() -> tuple[str, ...]:
    """``DOCUMENTED_MODULES`` of docs/conf.py, read without running it (it asks the network for
    the other projects' inventories)."""
    for node in ast.parse((DOCS / "conf.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "DOCUMENTED_MODULES":
            return ast.literal_eval(node.value)
    raise AssertionError("docs/conf.py defines no DOCUMENTED_MODULES")


def gallery_uses() -> dict[str, set[str]]:
    """The modules of the package the gallery's examples use, with the names they take of each."""
    used: dict[str, set[str]] = {}
    for script in sorted((ROOT / "examples").glob("plot_*.py")):
        tree = ast.parse(script.read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("optuna_boxcox"):
                        aliases[alias.asname or alias.name] = alias.name
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "optuna_boxcox"
            ):
                for alias in node.names:
                    child = f"{node.module}.{alias.name}"
                    if _is_module(child):  # from optuna_boxcox import figures
                        aliases[alias.asname or alias.name] = child
                    else:
                        used.setdefault(node.module, set()).add(alias.name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                module = aliases.get(node.value.id)
                if module is not None:
                    used.setdefault(module, set()).add(node.attr)
    return used


def _is_module(name: str) -> bool:
    parent = name.rpartition(".")[0]
    is_package = hasattr(importlib.import_module(parent), "__path__")
    return is_package and importlib.util.find_spec(name) is not None


def test_the_api_reference_lists_every_public_name_of_each_module_it_documents():
    listed = listed_by_module()
    assert set(listed) == set(documented_modules()), "docs/api.rst and docs/conf.py disagree"
    for module, names in listed.items():
        public = set(importlib.import_module(module).__all__)
        assert names == public, (
            f"{module}: missing from docs/api.rst {sorted(public - names)}, "
            f"not public {sorted(names - public)}"
        )


def test_the_api_reference_documents_every_module_and_name_the_gallery_uses():
    listed = listed_by_module()
    for module, names in gallery_uses().items():
        assert module in listed, f"the gallery uses {module}, which docs/api.rst does not document"
        assert names <= listed[module], (
            f"{module}: the gallery uses {sorted(names - listed[module])}"
        )


def test_a_class_page_lists_inherited_methods_and_an_exceptions_stops_at_base_exception():
    # The pages listed fit and predict only: a method defined by a base class (score, get_params,
    # Optuna's sample_relative) or without a docstring was left out.
    templates = DOCS / "_templates" / "autosummary"
    assert re.search(r"^   :inherited-members:$", (templates / "class.rst").read_text(), re.M)
    exception = (templates / "exception.rst").read_text()
    assert re.search(r"^   :inherited-members: BaseException$", exception, re.M)


def _public_methods(cls: type) -> set[str]:
    return {
        name
        for name in dir(cls)
        if not name.startswith("_")
        and not re.fullmatch(r"set_\w+_request", name)  # scikit-learn's routing machinery
        and inspect.isfunction(getattr(getattr(cls, name), "__func__", getattr(cls, name)))
    }


@pytest.mark.long
# Sphinx's own napoleon reads autodoc's options the way Sphinx 9 deprecates (nothing of ours).
@pytest.mark.filterwarnings("ignore:The mapping interface for autodoc options objects")
def test_the_built_api_pages_have_an_entry_for_every_public_method(tmp_path, monkeypatch):
    """Sphinx builds docs/api.rst with docs/conf.py (its hooks and templates; no gallery, no
    network) and every public method of every documented class has an entry."""
    pytest.importorskip(
        "sphinx",
        reason="Sphinx is the docs extra: .venv/bin/python -m pip install -e '.[docs]' "
        "(make docs installs it)",
    )
    import urllib.request

    from sphinx.cmd.build import build_main

    def offline(*args, **kwargs):
        raise OSError("no network in this test")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    source = tmp_path / "source"
    source.mkdir()
    conf = DOCS / "conf.py"
    (source / "conf.py").write_text(
        f"exec(compile(open({str(conf)!r}, encoding='utf-8').read(), {str(conf)!r}, 'exec'))\n"
        "extensions = [e for e in extensions if e not in ('sphinx_gallery.gen_gallery', "
        "'myst_parser')]\n"
        f"templates_path = [{str(DOCS / '_templates')!r}]\n"
        "html_theme = 'basic'\n",
        encoding="utf-8",
    )
    page = API.read_text(encoding="utf-8").replace(
        ":doc:`gallery <auto_examples/index>`", "gallery"
    )
    (source / "index.rst").write_text(page, encoding="utf-8")
    assert build_main(["-q", "-b", "html", str(source), str(tmp_path / "html")]) == 0
    missing = []
    for module, names in listed_by_module().items():
        for name in sorted(names):
            obj = getattr(importlib.import_module(module), name)
            if not inspect.isclass(obj):
                continue
            html = (tmp_path / "html" / "generated" / f"{module}.{name}.html").read_text()
            entries = set(re.findall(rf'id="{re.escape(f"{module}.{name}.")}(\w+)"', html))
            missing += [f"{module}.{name}.{m}" for m in sorted(_public_methods(obj) - entries)]
    assert missing == [], f"public methods without an entry in the API reference: {missing}"


def test_no_user_page_presents_a_private_function_as_the_api():
    # The command-line guide named run_search (optuna_boxcox._lifecycle) beside optimize and
    # BoxCoxClassifier as "the Python API"; the reference linked choose_fidelity.
    private = re.compile(r"`(optuna_boxcox(?:\.\w+)*\._(?!_)\w+[\w.]*)")
    found = [
        f"{page.relative_to(ROOT)}: {m[1]}"
        for page in [*USER_PAGES, API]
        for m in private.finditer(page.read_text(encoding="utf-8"))
    ]
    assert found == [], found
    guide = (DOCS / "guide" / "command_line.md").read_text(encoding="utf-8")
    assert "`run_search`" not in guide


def test_no_docstring_of_the_api_reference_points_to_a_private_name():
    # AutoFidelity's summary, on the reference's first page, sent readers to
    # optuna_boxcox._objective._auto.choose_fidelity.
    private = re.compile(r"optuna_boxcox(?:\.\w+)*\._(?!_)\w+")
    found = []
    for module, names in listed_by_module().items():
        for name in sorted(names):
            obj = getattr(importlib.import_module(module), name)
            if not (inspect.isclass(obj) or inspect.isroutine(obj)):
                continue
            members = [(name, obj)]
            if inspect.isclass(obj):
                members += [(f"{name}.{m}", getattr(obj, m)) for m in _public_methods(obj)]
            for label, member in members:
                found += [f"{module}.{label}: {hit}" for hit in private.findall(_doc(member))]
    assert found == [], found


def _doc(obj) -> str:
    return inspect.getdoc(obj) or ""


def test_an_extra_is_installed_from_the_checkout_as_the_pages_say():
    # pip install 'optuna-boxcox[peers]' fails: the package is not on a package index.
    wrong = re.compile(r"pip install '?optuna-boxcox")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in [*USER_PAGES, *sorted((ROOT / "optuna_boxcox").rglob("*.py"))]
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if wrong.search(line)
    ]
    assert found == [], f"an install from a package index the package is not on: {found}"


def test_the_license_is_the_mit_license_pyproject_declares_and_a_changelog_is_beside_it():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # no tomllib on 3.10
    assert re.search(r'^license = "MIT"', pyproject, re.M)
    version = re.search(r'^version = "([^"]+)"', pyproject, re.M)[1]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    # No release has been made: the changelog names none beyond pyproject's own version.
    versions = set(re.findall(r"\b\d+\.\d+\.\d+\b", changelog))
    assert versions <= {version}, versions


def test_the_performance_page_is_short_and_every_figure_on_it_is_in_the_log():
    page = (DOCS / "performance.md").read_text(encoding="utf-8")
    log = (DOCS / "performance_log.md").read_text(encoding="utf-8")
    assert len(page.split()) <= 1_300, "the Performance page is read in five minutes"
    assert "(performance_log.md)" in page
    number = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
    untraced = sorted(set(number.findall(page)) - set(number.findall(log)))
    assert untraced == [], f"figures of docs/performance.md not in the log: {untraced}"
    # The log keeps what users' data cost among its sections, newest first.
    sections = re.findall(r"^## (.+)$", log, re.M)
    assert any(title.startswith("The data users have") for title in sections), sections
    toctree = (DOCS / "index.md").read_text(encoding="utf-8")
    assert re.search(r"<performance>$", toctree, re.M)
    assert re.search(r"<performance_log>$", toctree, re.M)
