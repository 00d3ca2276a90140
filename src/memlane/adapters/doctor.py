"""``memlane doctor``'s checks: whatever would keep memory from working here — a config that does
not load, a memory folder that cannot be read, an index that cannot be kept, installed hooks whose
command does not run — each as a :class:`Problem` saying what, where, and how to fix it. The
hooks stay silent on these (a hook never blocks the agent); the doctor is where they are named.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import sys
import time
from pathlib import Path

from ..config import Config, cache_home, config_home
from ..errors import ConfigError
from ..index.sqlite import NOT_CHECKED_LOCKED
from ..memory import Memory
from ..records import asdict, dataclass


@dataclass
class Problem:
    """One thing doctor found wrong: what, where, and how to fix it."""

    what: str
    where: str
    fix: str

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.what}\n    where: {self.where}\n    fix: {self.fix}"


def open_memory_for_doctor(open_memory, args) -> tuple[Memory, list[Problem]]:
    """The Memory the hooks would open here; when the config does not load, the problem and a
    Memory on the defaults (so the rest can still be checked)."""
    try:
        return open_memory(args), []
    except ConfigError as exc:
        where = str(exc.path or config_home() / "config.toml")
        problem = Problem(f"the config does not load, so the hooks inject nothing: {exc}", where,
                          "correct or remove that setting (docs/configuration.md lists every setting with its "
                          "default and meaning)")
        from .cli.common import store_args

        memory = Memory(store_args(args), config=Config().validate(), embedder=getattr(args, "embedder", None),
                        index_path=getattr(args, "index", None))
        memory.config.sources = [f"{where} (does not load: what follows uses the defaults)"]
        return memory, [problem]


def check_stores(memory: Memory) -> list[Problem]:
    """Memory folders that are configured but missing, or there but unreadable."""
    problems = []
    for spec in memory.candidate_specs():
        if not spec.path.exists():
            if spec.label == "config":
                problems.append(Problem("a mounted memory folder does not exist", str(spec.path),
                                        "create it, or take it out of [stores] mounts in your config"))
            continue  # the user store and the project store are created by the first note
        if not spec.path.is_dir():
            problems.append(Problem("a memory folder is not a folder", str(spec.path),
                                    "move the file aside, or point the setting at a folder"))
        elif not os.access(spec.path, os.R_OK | os.X_OK):
            problems.append(Problem("a memory folder cannot be read", str(spec.path),
                                    f"give yourself read access: chmod u+rx '{spec.path}'"))
    return problems


def check_shared_folder(memory: Memory) -> list[Problem]:
    """Claude Code's memory folder for this repository, when it also serves another repository
    (their paths differ only in characters its folder name replaces with ``-``)."""
    from ..store.discovery import sharing_repositories

    folder = next((spec.path for spec in memory.candidate_specs() if spec.label == "claude-code"), None)
    if folder is None or memory.repo is None:
        return []
    others = sharing_repositories(Path(memory.repo))
    if not others:
        return []
    return [Problem(f"Claude Code keeps this repository's memory in a folder it also uses for {_one_line(', '.join(others))} "
                    "(their paths differ only in characters its folder names replace with '-'): the notes of each "
                    "reach the other's sessions", str(folder),
                    "give one of them a folder of its own: start Claude Code there with CLAUDE_CODE_PROJECT_DIR_NAME "
                    "set to a name of your choice (for example in that repository's .envrc), or rename one "
                    "repository's folder")]


def check_index(memory: Memory) -> tuple[dict | None, list[Problem]]:
    """Bring the keyword index up to date, as a hook would; what that reported, and what kept it
    from working."""
    path = memory.index_path
    try:
        report = memory.refresh(embed=False)
    except Exception as exc:  # noqa: BLE001 - whatever it is, it is the problem to report
        return None, [Problem(f"the index cannot be read or built: {type(exc).__name__}: {exc}", str(path),
                              "move the file aside and run `memlane index` (memlane rebuilds it from the notes)")]
    problems = []
    trouble = report.get("index_problem")
    if trouble and "locked" not in trouble.lower():  # a lock held by another process passes by itself
        problems.append(Problem(f"the index cannot be written ({trouble}); every hook reads the notes again from "
                                "scratch", str(path),
                                "make its folder writable and yours, or set [index] path to a folder you own"))
    if memory.graph_unsettled():
        problems.append(Problem("after a link edit in this large store, the notes' hub scores, clusters and "
                                "constellations are still those from before it (recall follows the new link already)",
                                str(memory.index_path), "run `memlane index`, or keep the daemon running "
                                "(`memlane serve --daemon`): it settles them in the background within a minute"))
    return report.as_dict(), problems


def check_integrity(memory: Memory, integrity: str) -> list[Problem]:
    """The index's integrity as ``Memory.doctor`` found it (checked once: the check reads the whole
    file): a problem when it is damaged; a lock another process holds passes by itself."""
    if integrity in ("ok", NOT_CHECKED_LOCKED):
        return []
    return [Problem(f"the index is damaged: {integrity}", str(memory.index_path),
                    "run `memlane index` (a damaged index is moved aside and rebuilt)")]


def check_socket_folder() -> list[Problem]:
    """The daemon's socket folder, when it exists but is not private: the hooks then refuse it and
    answer every prompt by keyword, in a fresh process, with no daemon."""
    from .hookclient import private_dir, runtime_dir

    path = runtime_dir()
    if not os.path.lexists(path) or private_dir(create=False) is not None:
        return []
    st = os.lstat(path)
    what = "a link" if stat.S_ISLNK(st.st_mode) else "not a folder" if not stat.S_ISDIR(st.st_mode) else \
        f"owned by uid {st.st_uid}" if st.st_uid != os.getuid() else f"mode {stat.S_IMODE(st.st_mode):o}"
    return [Problem(f"the daemon's socket folder is not private ({what}): the hooks refuse to use it, so every "
                    "prompt is answered by keyword only, without the daemon", path,
                    f"remove it (`rm -r {path}`: memlane creates it again, mode 700) or make it a folder of yours "
                    f"with `chmod 700 {path}`")]


#: the install flag of each scope a hook or MCP server is registered in
_SCOPE_FLAGS = {"local": "", "shared": " --shared", "user": " --user"}


def check_hooks(hooks: dict[str, dict[str, str]]) -> list[Problem]:
    """Installed hooks whose command would not run on this machine, runs more than memlane, or
    whose repository's settings set what decides what it runs."""
    from .agents import load
    from .install import settings_path, unguarded, written_handlers

    problems = []
    for agent, where in hooks.items():
        # the repository's files (its local one can be committed too), whichever file holds memlane's
        # hooks: the agent applies every settings file's env to every command it runs, the hooks of the
        # user's own settings too; the user's own PATH is theirs
        scopes = ("local", "shared") if load(agent).local_settings_file else ("shared",)
        for path in dict.fromkeys(str(settings_path(scope, agent=agent)) for scope in scopes) if where else ():
            steering = _steering_env(Path(path)) if path != str(settings_path("user", agent=agent)) else []
            if steering:
                named = _one_line(", ".join(steering))
                problems.append(Problem(f"the {agent} settings in this repository set {named} for "
                                        "the agent's commands, which decides what memlane's hooks run (another "
                                        "program in memlane's name, a library or module loaded into it, memlane's "
                                        "own config)", path,
                                        "read what that setting points at before an agent starts here; take it out "
                                        "of that file's \"env\" unless your team put it there on purpose"))
        for scope, path in where.items():
            for handler in written_handlers(Path(path)):
                written = str(handler.get("command", ""))
                command = unguarded(written)
                if _runs_more_than_memlane(written) or _not_run_by_sh(handler) or (
                        scope == "shared" and _in_repository(_program(command), Path(path).parent.parent)):
                    problems.append(Problem(f"the {agent} hooks run more than memlane: `{_one_line(written)}`", path,
                                            "read what else that command runs before an agent starts here; "
                                            f"`memlane install {agent}{_SCOPE_FLAGS[scope]}` puts memlane's own command "
                                            "in its place"))
                    break
                program = _program(command)
                if program is None or _runs(program):
                    continue
                fix = (f"install memlane as a tool so `{program}` is on your PATH (see the README's Install), or run "
                       f"`memlane install {agent}` for this machine's own settings" if "/" not in program else
                       f"run `memlane install {agent}{_SCOPE_FLAGS[scope]}` again from the memlane you use now")
                problems.append(Problem(f"the {agent} hooks run `{program}`, which does not exist here, so they "
                                        "inject nothing", path, fix))
                break
    return problems


def check_mcp(servers: dict[str, dict]) -> list[Problem]:
    """A registered MCP server that would not start: its program does not exist here, or it is
    this installation, which lacks the MCP SDK (Claude Code then shows the server as failed)."""
    from .install import mcp_missing

    problems = []
    for scope, server in servers.items():
        program = server["command"][0]
        found = program if "/" in program and _runs(program) else shutil.which(program) if "/" not in program else None
        if found is None:
            fix = (f"install memlane as a tool so `{program}` is on your PATH (see the README's Install)"
                   if "/" not in program else f"run `memlane install claude --mcp{_SCOPE_FLAGS[scope]}` again from the "
                                              "memlane you use now")
            problems.append(Problem(f"the MCP server registered with Claude Code runs `{program}`, which does not "
                                    "exist here, so it does not start", server["path"], fix))
        elif _this_installation(found) and mcp_missing():
            problems.append(Problem("the MCP server registered with Claude Code is this memlane, which lacks the MCP "
                                    "SDK, so it does not start", server["path"],
                                    "pip install 'memlane[mcp]' into this memlane's environment, or take the server "
                                    f"out: `memlane uninstall claude --mcp{_SCOPE_FLAGS[scope]}`"))
    return problems


def check_committed_mcp(path: Path) -> list[Problem]:
    """What the ``memlane`` entry of a repository's committed ``.mcp.json`` (``mcpServers.memlane``)
    runs, when it is not memlane's MCP server as ``memlane install claude --mcp --shared`` writes it
    (``memlane mcp``, memlane's own options after it): another program, a shell with a command of
    its own, an environment that makes Python run other code, a remote server. A cloned repository
    can commit one; Claude Code starts it once the user approves the project's servers. A file that
    is not JSON, or not in ``.mcp.json``'s shape, is said so too."""
    import json

    fix = ("read what it runs before you approve this project's MCP servers in Claude Code; "
           "`memlane install claude --mcp --shared` puts memlane's own server in its place")
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        why = ("is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else f"is not valid JSON ({exc})"
               if isinstance(exc, ValueError) else f"cannot be read ({exc.strerror or exc})")
        return [Problem(f"this project's .mcp.json {why}, so Claude Code cannot read its MCP servers, and doctor "
                        "cannot check what its memlane server runs", str(path),
                        "correct the file (or remove it); `memlane install claude --mcp --shared` then registers "
                        "memlane's server in it")]
    if isinstance(settings, dict) and "mcpServers" not in settings:
        return []
    servers = settings["mcpServers"] if isinstance(settings, dict) else None
    if not isinstance(servers, dict):
        return [Problem("this project's .mcp.json is not in the shape Claude Code reads (an object with an "
                        "\"mcpServers\" object), so doctor cannot check what its memlane server runs", str(path),
                        "correct the file (or remove it)")]
    if "memlane" not in servers:
        return []
    server = servers["memlane"]
    kind = server.get("type", "stdio") if isinstance(server, dict) else None
    if isinstance(server, dict) and kind != "stdio":  # Claude Code reads an entry without "type" as stdio
        return [Problem(f"the MCP server named memlane in this project's .mcp.json is a remote server (type "
                        f"{kind!r}), not memlane's MCP server, which runs on this machine", str(path), fix)]
    command = server.get("command") if isinstance(server, dict) else None
    args = server.get("args", []) if isinstance(server, dict) else None
    if not isinstance(command, str) or not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return [Problem("the MCP server named memlane in this project's .mcp.json is no command with a list of "
                        "arguments", str(path), fix)]
    shown = shlex.join([command, *args])
    shown = _one_line(shown if len(shown) <= 300 else shown[:299] + "…")
    # memlane writes the bare name (each machine's PATH finds it); a path is memlane's only outside the
    # repository: a program the repository holds, named memlane, is the repository's own
    root = path.parent.resolve()
    program = command == "memlane" or (os.path.isabs(command) and os.path.basename(command) == "memlane"
                                       and not _in_repository(command, root))
    runs_memlane = program and args[:1] == ["mcp"]
    if not runs_memlane:
        return [Problem(f"the MCP server named memlane in this project's .mcp.json runs something other than "
                        f"memlane's MCP server: `{shown}`", str(path), fix)]
    env = server.get("env")
    odd = _steering(env) if isinstance(env, dict) else []
    if odd or (env is not None and not isinstance(env, dict)):
        return [Problem(f"the MCP server named memlane in this project's .mcp.json runs memlane with "
                        f"{', '.join(odd) or 'an env that is not an object'} set, which can make it run other code",
                        str(path), fix)]
    return []


def _this_installation(program: str) -> bool:
    """Whether ``program`` lives in the environment this memlane runs in."""
    prefix = Path(sys.prefix).resolve()
    return Path(program).absolute().parent.resolve().is_relative_to(prefix) or Path(program).resolve() == \
        Path(sys.executable).resolve()


def check_team(status: dict | None) -> list[Problem]:
    """A team store the config names that does not answer (the hooks then recall the local scopes
    only, and log why)."""
    if status is None or status.get("answers"):
        return []
    skipped = status.get("skipped_for_s")
    meanwhile = (f"; after it last failed, prompts leave it out at once, without waiting for it, for {skipped} s "
                 "more, then ask it again" if skipped else "")
    return [Problem(f"the team store does not answer, so recall leaves the team's notes out: {status.get('problem')}"
                    f"{meanwhile}",
                    f"{status.get('dsn')} (team {status.get('team')})",
                    "fix [team] dsn and name in your config (docs/team.md); `memlane team status` checks it again")]


def check_judge(memory: Memory) -> list[Problem]:
    """A judge command that cannot run as configured (a relative path, a program not on PATH):
    the daemon then asks no judge and the ranking alone chooses (logged per prompt)."""
    judge = memory.config.judge
    if not (judge.configured and judge.command):
        return []
    from ..judge.command import JudgeFailed, resolve_program

    try:
        resolve_program(judge.command[0])
    except JudgeFailed as exc:
        where = ", ".join(memory.config.sources) or str(config_home() / "config.toml")
        return [Problem(f"the judge cannot run, so the ranking alone chooses: {exc}", f"[judge] command in {where}",
                        "set judge.command's first item to an absolute path (~/ is your home) or to a program on "
                        "your PATH (docs/judge.md)")]
    return []


def recent_hook_failures(hours: float = 24.0, limit: int = 3) -> list[str]:
    """The last hook failures logged in ``hook.log`` within ``hours`` (newest last), since the
    last hook that answered: a failure a later answer followed (the config fixed since) is past."""
    path = cache_home() / "hook.log"
    try:
        if time.time() - path.stat().st_mtime > hours * 3600:
            return []
        with open(path, "rb") as handle:
            handle.seek(max(0, path.stat().st_size - 200_000))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    cutoff = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - hours * 3600))
    answered = max((n for n, line in enumerate(lines) if _ANSWERED.search(line)), default=-1)
    failed = [line for line in lines[answered + 1:] if (" failed" in line or "not answered" in line)
              and line[:19] >= cutoff]
    return failed[-limit:]


_ANSWERED = re.compile(r" memlane: hook [\w-]+: session .*, \d+ chars in \d+ ms$")


#: environment variables that decide what a hook command runs: where ``memlane-hook`` is found,
#: what its Python imports first, a library loaded into every program, a file bash runs first, a
#: shell function standing in for a command, a trace prompt expanded (substitutions and all); and
#: what names the user's own files: ``~`` (a hook under ``~/``, Python's user site-packages, the
#: user's config), the user's config itself (trusted as written: ``judge.command`` runs, where a
#: repository's ``.memlane.toml`` may not name one), the user store, the index, the team database.
#: ``ZDOTDIR``: the folder zsh runs ``.zshenv`` from, for every zsh, ``zsh -c`` too — the shell an
#: agent hands the hook line to may be zsh (Codex's ``$SHELL -lc``; macOS's login shell). Not ``ENV``:
#: sh, dash and bash read it only when interactive, and no agent runs a hook in an interactive shell.
#: ``CLAUDE_CODE_SHELL_PREFIX``: Claude Code runs each hook's command through the program it names
_STEERING = ("PATH", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "ZDOTDIR", "CLAUDE_CODE_SHELL_PREFIX", "HOME",
             "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "MEMLANE_CONFIG", "MEMLANE_CACHE_DIR",
             "MEMLANE_TEAM_DSN")
_STEERING_PREFIXES = ("PYTHON", "LD_", "DYLD_", "BASH_FUNC_")


def _steering(env: dict) -> list[str]:
    """The variables of ``env`` (an agent's ``env`` for its commands, an MCP server's own) that
    decide what a command runs, sorted."""
    return sorted(str(k) for k in env if str(k) in _STEERING or str(k).startswith(_STEERING_PREFIXES))


def _steering_env(path: Path) -> list[str]:
    """The variables among ``_STEERING`` that the settings file at ``path`` sets for the agent's
    commands (Claude Code's ``env``)."""
    from .install import read_settings_file

    settings = read_settings_file(path)
    env = settings.get("env") if isinstance(settings, dict) else None
    return _steering(env) if isinstance(env, dict) else []


#: what makes a shell run more than the words it is given, wherever in the line: a newline (a
#: second command), a command substitution (``$(…)``, backticks), bash's arithmetic (``$[…]``) and
#: any ``${…}`` but a plain name: ``${X@P}`` expands X's value as a prompt, substitutions and all,
#: and an index (``${a[X]}``; zsh's ``$HOME[X]`` without braces) evaluates X's value as arithmetic,
#: which runs the ``$(…)`` it holds — a committed settings file sets X too (Claude Code's ``env``);
#: zsh's flags without braces (``$~X`` globs X's value, and a glob's ``*(e:…:)`` runs what it holds)
_SHELL_RUNS = re.compile(r"[\n\r`]|\$[(\[~^=+]|\$\{(?![A-Za-z_][A-Za-z0-9_]*\})"
                         r"|\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])\[")


def _outside_single_quotes(line: str) -> str:
    """``line`` without what it holds inside single quotes, which every shell reads as it is written:
    install quotes memlane's path so (``'/opt/$(x)/bin/memlane-hook'`` names a folder, it runs
    nothing). All of ``line`` when it holds a backslash: inside single quotes fish reads ``\\'`` as a
    quote (and bash's ``$'…'`` does), so the shells would end a quoted part in different places."""
    if "\\" in line:
        return line
    out, i, double = [], 0, False
    while i < len(line):
        ch = line[i]
        if ch == "'" and not double:
            end = line.find("'", i + 1)
            if end < 0:
                return line  # an open quote: shlex refused it already
            out.append("''")
            i = end + 1
            continue
        double ^= ch == '"'
        out.append(ch)
        i += 1
    return "".join(out)


def _in_repository(program: str | None, root: Path) -> bool:
    """Whether ``program``, a path, is a file of the repository at ``root`` (``/home/me/clone/memlane-hook``,
    ``~/clone/memlane-hook``): what the shared settings run is the repository's own then — install writes
    memlane's bare name there, which each machine's PATH finds — and a program of its .mcp.json alike."""
    return bool(program) and "/" in program and \
        Path(os.path.expanduser(program)).resolve().is_relative_to(root.resolve())


def _not_run_by_sh(handler: dict) -> bool:
    """Whether the agent runs a hook otherwise than by the POSIX shell ``_runs_more_than_memlane``
    reads its command as, which memlane never writes: ``"shell": "powershell"`` (Claude Code hands
    the line to PowerShell, which quotes otherwise: ``’`` ends a single-quoted part there, so
    ``memlane-hook '’; touch x; ’'`` runs touch) or ``args`` (no shell at all: ``~/memlane-hook``
    is then a ``~`` folder of the working one)."""
    return handler.get("shell") not in (None, "bash") or "args" in handler


def _runs_more_than_memlane(command: str) -> bool:
    """Whether a hook command counted as memlane's (it names memlane somewhere) runs anything but
    memlane: more shell than the one command memlane writes — a list (``;``, ``&&``, ``|``, a
    newline), a redirection, a subshell, a command substitution, inside the guard or after it —,
    a guard that tests anything but memlane's program, or a program that is not memlane's (an
    environment prefix, ``./memlane-hook`` from the repository, ``python evil.py memlane-hook``,
    ``python -m memlane`` without ``-P``, which imports a ``memlane/`` in the project first) — a
    cloned repository's committed settings can write any of these."""
    from .install import _GUARDED, PORTABLE_CLI, PORTABLE_HOOK

    try:
        words = shlex.split(command)
    except ValueError:
        return True
    inner = words[2] if len(words) == 3 and words[:2] == ["sh", "-c"] else command  # what ``sh -c`` runs
    guard = _GUARDED.match(inner)
    if guard:
        if guard.group(1) not in (PORTABLE_HOOK, PORTABLE_CLI):
            return True  # the guard's own test runs what its program word holds
        inner = guard.group(2)
    if _SHELL_RUNS.search(_outside_single_quotes(inner)):
        return True
    lexer = shlex.shlex(inner, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # a shell's "#" starts a comment only at a word's start: "x#;touch y" runs touch
    try:
        words = list(lexer)
    except ValueError:
        return True
    if any(word and set(word) <= set("();<>|&") for word in words):
        return True
    return not _memlane_program(words) or not _written_as_is(words[0], inner)


def _written_as_is(program: str, line: str) -> bool:
    """Whether ``line`` starts with ``program`` written as install writes it, so a shell reads
    those very letters: bare, with nothing a shell expands (``/$PWD/memlane-hook`` is the working
    folder's file, ``~/*/memlane-hook`` and ``/h*/*/*/memlane-hook`` globs that reach it), a bare
    ``~/`` for the user's home; or quoted whole, as install quotes an odd path
    (``'/opt/my tools/bin/memlane-hook'``), or in double quotes with nothing they expand — not
    ``'~/…'``, a ``~`` folder in the working one."""
    head = line.lstrip(" \t")
    if not program.startswith("~"):
        doubled = f'"{program}"' if not set(program) & set('$`\\"') else shlex.quote(program)
        return head.startswith((shlex.quote(program), doubled))
    rest = program.removeprefix("~/")
    return bool(rest) and shlex.quote(rest) == rest and head.startswith(program)


def _one_line(text: str) -> str:
    """``text`` with its control characters written as escapes (``\\n``, ``\\x1b``): a command from
    a cloned repository's file is shown as it is written, on one line, and cannot drive the terminal."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda m: repr(m.group())[1:-1], text)


def _memlane_program(words: list[str]) -> bool:
    """Whether ``words`` start with memlane's program as memlane writes it: ``memlane-hook`` or
    ``memlane`` by name (found on the PATH), by absolute path or under ``~/``; or an interpreter
    by absolute path running ``-P -m memlane.adapters.cli``. A relative path is the repository's own file."""
    from .install import PORTABLE_CLI, PORTABLE_HOOK

    program = words[0] if words else ""
    # /proc/self/cwd/…, /dev/fd/…: an absolute path that is the repository's own file all the same, however
    # written ("//proc/…", "/./proc/…"); a ".." may climb there from anywhere ("~/../../proc/self/cwd/…")
    parts = program.split("/")
    inside = "/".join(part for part in parts if part not in ("", "."))
    named = ".." not in parts and (program in (PORTABLE_HOOK, PORTABLE_CLI) or program.startswith("~/") or (
        os.path.isabs(program) and not inside.startswith(("proc/", "dev/"))))
    if not named:
        return False
    if os.path.basename(program) in (PORTABLE_HOOK, PORTABLE_CLI):
        return True
    # the module form install writes with the interpreter it runs under, whatever its name: CPython's or PyPy's
    return os.path.basename(program).startswith(("python", "pypy")) and \
        words[1:4] == ["-P", "-m", "memlane.adapters.cli"]


def _program(command: str) -> str | None:
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return words[0] if words else None


def _runs(program: str) -> bool:
    if "/" in program:
        return os.path.isfile(program) and os.access(program, os.X_OK)
    return shutil.which(program) is not None


__all__ = ["Problem", "check_committed_mcp", "check_hooks", "check_index", "check_integrity", "check_judge",
           "check_mcp", "check_shared_folder", "check_stores", "check_team",
           "open_memory_for_doctor", "recent_hook_failures"]
