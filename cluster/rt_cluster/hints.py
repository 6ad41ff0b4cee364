"""What ``rt_cluster`` says when a name is not one it knows: a command, a cluster, a node.

Rules:
1. One line, naming what was asked and what exists. A close match is offered ("did you
   mean") through ``difflib``, never taken: nothing is done on a guess, not even when only one
   cluster exists and ``--name`` was left out.
2. Node ids are numbers: a near string is no near node (``10`` is not a typo of ``1``), so an
   unknown id lists the ids there are, long runs shortened (``0..99``).
3. An unknown option of a known meaning is answered with the option of that meaning
   (``SYNONYMS``: ``--count`` and ``--size`` mean ``--nodes``) before the closest spelling,
   which may mean something else entirely (``--nodes`` is near ``--netns``).
4. Whatever the user typed is quoted through ``cluster.ground.parse.shown`` (escaped, cut short).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from pathlib import Path

from cluster.ground.parse import shown

__all__ = [
    "did_you_mean",
    "id_list",
    "name_list",
    "unknown_cluster",
    "unknown_command",
    "unknown_node",
]

CUTOFF = 0.6  # difflib's similarity a suggestion must reach (its own default)
MAX_NAMES = 12  # names one message lists before "... (N in all)"
RUN = 4  # consecutive ids shown as a range from this many on
SYNONYMS = {  # a word a user may reach for -> the option that means it (rule 3)
    "--count": "--nodes",
    "--size": "--nodes",
    "--node": "--nodes",
    "--num-nodes": "--nodes",
    "--number": "--nodes",
    "--budget": "--budget-s",
    "--seconds": "--budget-s",
    "--time": "--budget-s",
    "--port": "--base-port",
    "--workers": "--jobs",
}


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``word`` when one is close enough, else None."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=CUTOFF)
    return close[0] if close else None


def id_list(ids: Iterable[int]) -> str:
    """``0, 1, 2`` or, with runs of ``RUN`` or more, ``0..9, 12``; ``none`` when empty."""
    parts: list[str] = []
    run: list[int] = []
    for i in sorted(set(ids)):
        if run and i != run[-1] + 1:
            parts.append(_run(run))
            run = []
        run.append(i)
    if run:
        parts.append(_run(run))
    return ", ".join(parts) or "none"


def _run(run: list[int]) -> str:
    if len(run) >= RUN:
        return f"{run[0]}..{run[-1]}"
    return ", ".join(map(str, run))


def name_list(names: Sequence[str]) -> str:
    """At most ``MAX_NAMES`` names, comma-separated, then how many there are in all."""
    shown_names = ", ".join(names[:MAX_NAMES])
    return shown_names + (f", ... ({len(names)} in all)" if len(names) > MAX_NAMES else "")


def unknown_command(word: str, commands: Sequence[str]) -> str:
    """``unknown command 'stauts'; did you mean 'status'?`` or the list of commands."""
    close = did_you_mean(word, commands)
    if close is not None:
        return f"unknown command {shown(word)}; did you mean {close!r}?"
    return f"unknown command {shown(word)} (commands: {', '.join(commands)})"


def unknown_option(option: str, options: Sequence[str]) -> str:
    """``unknown option '--forground'; did you mean '--foreground'?`` or the options there
    are."""
    meant = SYNONYMS.get(option)
    close = meant if meant in options else did_you_mean(option, options)
    if close is not None:
        return f"unknown option {shown(option)}; did you mean {close!r}?"
    return f"unknown option {shown(option)} (options: {', '.join(options)})"


def unknown_cluster(name: str, known: Sequence[str], home: Path) -> str:
    """No cluster ``name``: the clusters there are and how to pick one (``--name NAME``), or
    how to start one when there is none."""
    if not known:
        return (
            f"no cluster named {name!r} (no clusters under {home}); start one with: "
            f"rt_cluster up -n 3 --name {name}"
        )
    close = did_you_mean(name, known)
    if close is not None:
        return (
            f"no cluster named {name!r}; did you mean {close!r}? (add --name {close}; "
            f"clusters: {name_list(known)})"
        )
    if len(known) == 1:
        only = known[0]
        return (
            f"no cluster named {name!r}; the one cluster here is {only!r}: add --name {only} "
            f"(e.g. rt_cluster status --name {only})"
        )
    return (
        f"no cluster named {name!r}; clusters here: {name_list(known)} "
        f"(choose one with --name NAME)"
    )


def unknown_node(cluster: str, node_id: int, ids: Iterable[int], agents: Iterable[int] = ()) -> str:
    """No node ``node_id`` in the cluster: the ids it has (and its Serf agents' numbers)."""
    shown_agents = id_list(agents)
    more = f"; Serf agents: {shown_agents}" if shown_agents != "none" else ""
    return f"cluster {cluster!r} has no node {node_id} (nodes: {id_list(ids)}{more})"
