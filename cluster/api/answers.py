"""The shapes of the runtime's answers, as JSON Schema for the API document.

Rules:
1. One schema per answer the runtime builds (``cluster.runtime``: health, topology,
   the admin queries, the views matrix, a pool monitor; compose, destroy);
   ``NODE_ANSWERS`` has one entry per per-node query (``ADMIN_QUERIES``), and a test holds
   the two tables equal.
2. Required keys are the ones every answer carries; a measured float is ``FIGURE`` (a number,
   or null: the API writes NaN and infinities as null and a figure that cannot be read is
   null). Other keys are allowed, so adding a field breaks no client.
3. The tests validate every live answer against these (``tests/dashboard/test_openapi.py``
   in process, schemathesis on a running cluster), so a schema that drifts fails there.
"""

from __future__ import annotations

from .apidoc import (
    ANY,
    BOOLEAN,
    INTEGER,
    NUMBER,
    POOL_ID,
    STRING,
    Schema,
    array,
    mapping,
    nullable,
    obj,
    one_of,
)

__all__ = [
    "CHIMODS",
    "COMPOSED",
    "CONFIG",
    "DESTROYED",
    "FIGURE",
    "FORM_SPEC",
    "HEALTH",
    "MODULE_POOLS",
    "NODE_ANSWERS",
    "POOLS",
    "POOL_MONITOR",
    "TOPOLOGY",
    "VIEWS",
    "node_answer",
]

FIGURE: Schema = nullable(NUMBER)
COUNT: Schema = {"type": "integer", "minimum": 0}
NODE_ID: Schema = {"type": "integer", "minimum": 0}
POOL_ID_TEXT = POOL_ID
# The last two: a node speaking memberlist gives the state as memberlist says it.
STATE = one_of("alive", "probe_failed", "suspected", "dead", "suspect", "left")
VIEW = one_of("alive", "suspect", "dead", "left")

HEALTH = obj(
    {
        "ok": {"const": True},
        "node_id": NODE_ID,
        "hostname": STRING,
        "ip_address": STRING,
        "is_leader": BOOLEAN,
    }
)

TOPOLOGY = obj(
    {
        "self_node_id": NODE_ID,
        "leader_node_id": nullable(NODE_ID),
        "hostname": STRING,
        "nodes": array(
            obj(
                {
                    "node_id": NODE_ID,
                    "ip_address": STRING,
                    "state": STATE,
                    "alive": BOOLEAN,
                    "is_leader": BOOLEAN,
                    "is_self": BOOLEAN,
                    "incarnation": COUNT,
                    "since": FIGURE,
                    "view": VIEW,
                },
                {  # a node speaking memberlist (``shapes.topology``)
                    "name": STRING,
                    "tags": mapping(STRING),
                    "rtsim": BOOLEAN,
                    "ip": STRING,
                    "port": COUNT,
                },
            )
        ),
    }
)

POOL_ROW = obj(
    {"pool_id": POOL_ID_TEXT, "pool_name": STRING, "mod_name": STRING, "container_id": NODE_ID}
)
POOLS = obj({"pools": array(POOL_ROW)})
MODULE_POOLS = obj({"pools": array(obj({"pool_id": POOL_ID_TEXT, "pool_name": STRING}))})

NULLABLE_TEXT = nullable(STRING)
CONFIG = obj(
    {
        "port": INTEGER,
        "server_addr": STRING,
        "num_threads": INTEGER,
        "worker_count": INTEGER,
        "hostfile": STRING,
        "conf_dir": STRING,
        "learning_rate": NUMBER,
        "swim_enabled": BOOLEAN,
        "viz_port": INTEGER,
        "viz_bind": STRING,
        "modules": array(STRING),
        "sources": mapping(STRING),
        "paths": obj(
            {
                "conf_dir": NULLABLE_TEXT,
                "data_dir": NULLABLE_TEXT,
                "hostfile": NULLABLE_TEXT,
                "config_file": NULLABLE_TEXT,
            }
        ),
    }
)

CHIMODS = obj(
    {"chimods": array(obj({"name": STRING, "has_create": BOOLEAN, "has_pages": BOOLEAN}))}
)

FORM_SPEC = obj(
    {
        "mod_name": STRING,
        "title": STRING,
        "fields": array(
            obj(
                {
                    "name": STRING,
                    "label": STRING,
                    "type": one_of("text", "select", "textarea"),
                    "required": BOOLEAN,
                    "default": STRING,
                    "options": array(STRING),
                    "placeholder": STRING,
                    "help": STRING,
                }
            )
        ),
        "note": STRING,
    }
)

DISK_FAULT = obj({"latency_ms": NUMBER, "errors": NUMBER, "full": BOOLEAN})
FAULTS = obj(
    {
        "blocked": array(NODE_ID),
        "loss": mapping(NUMBER),
        "delay": mapping(NUMBER),
        "cut": array(NODE_ID),
        "clock": obj({"offset": NUMBER, "rate": NUMBER}),
        "disk": mapping(DISK_FAULT),
        "active": BOOLEAN,
    }
)

WORKER = obj(
    {
        "worker_id": COUNT,
        "is_running": BOOLEAN,
        "is_active": BOOLEAN,
        "idle_iterations": COUNT,
        "num_queued_tasks": COUNT,
        "num_blocked_tasks": COUNT,
        "num_periodic_tasks": COUNT,
        "num_retry_tasks": COUNT,
        "suspend_period_us": NUMBER,
        "num_tasks_processed": COUNT,
        "load": FIGURE,
    }
)

SAMPLE = obj(
    {
        "event_id": COUNT,
        "timestamp_ns": INTEGER,
        "wall_time_ns": INTEGER,
        "ram_total_bytes": COUNT,
        "ram_available_bytes": COUNT,
        "ram_usage_pct": FIGURE,
        "cpu_usage_pct": FIGURE,
        "gpu_count": COUNT,
        "gpu_usage_pct": FIGURE,
        "hbm_usage_pct": FIGURE,
        "hbm_used_bytes": COUNT,
        "hbm_total_bytes": COUNT,
        "hostname": STRING,
        "ip_address": STRING,
        "node_id": NODE_ID,
        "is_leader": BOOLEAN,
    }
)

METHOD = obj(
    {
        "id": COUNT,
        "name": STRING,
        "coefficient": FIGURE,
        "mape": FIGURE,
        "wall_coefficient": FIGURE,
        "wall_mape": FIGURE,
    },
    {"samples": COUNT, "trained": BOOLEAN},
)
CONTAINER = obj({**POOL_ROW["properties"], "methods": array(METHOD), "learning_rate": NUMBER})

EVENT = obj(
    {
        "seq": COUNT,
        "wall": FIGURE,
        "mono": FIGURE,
        "observer": NODE_ID,
        "subject": NODE_ID,
        "old": nullable(STRING),
        "new": STRING,
        "incarnation": COUNT,
        "cause": STRING,
    }
)
EVENTS = {
    "events": array(EVENT),
    "next": COUNT,
    "dropped": COUNT,
    "boot": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
}

PROCESS = {
    "pid": COUNT,
    "runtime_port": INTEGER,
    "dashboard_url": NULLABLE_TEXT,
    "uptime_s": FIGURE,
    "cpu_percent": FIGURE,
    "rss_bytes": nullable(COUNT),
    "incarnation": COUNT,
    "health_score": nullable(NUMBER),
    "loop_lag_ms": FIGURE,
    "loop_lag_max_ms": FIGURE,
    "machine": obj({"cpu_percent": FIGURE, "memory_percent": FIGURE}),
}

# What each per-node query answers after its leading ``node_id`` (``cluster.runtime.admin``).
_NODE_FIELDS: dict[str, dict[str, Schema]] = {
    "workers": {"workers": array(WORKER)},
    "system_stats": {"entries": array(SAMPLE)},
    "containers": {"containers": array(CONTAINER)},
    "bdevs": {"devices": array(obj({"pool_id": POOL_ID_TEXT, "stats": obj({})}))},
    "health": dict(HEALTH["properties"]),
    "topology": dict(TOPOLOGY["properties"]),
    "pools": {"pools": array(POOL_ROW)},
    "events": EVENTS,
    "faults": dict(FAULTS["properties"]),
    "process": PROCESS,
    "view": {
        "leader": nullable(NODE_ID),
        "views": mapping(VIEW),
        "faults": obj({"node_id": NODE_ID, **FAULTS["properties"]}),
    },
}


def node_answer(query: str) -> Schema:
    """The body of per-node query ``query``: ``node_id`` first, then the query's fields."""
    return obj({"node_id": NODE_ID, **_NODE_FIELDS[query]})


NODE_ANSWERS: dict[str, Schema] = {q: node_answer(q) for q in _NODE_FIELDS}

VIEWS = obj(
    {
        "node_id": NODE_ID,
        "observers": array(NODE_ID),
        "subjects": array(NODE_ID),
        "views": mapping(nullable(mapping(VIEW))),
        "errors": mapping(STRING),
        "leaders": mapping(nullable(NODE_ID)),
        "faults": mapping(nullable(obj({"node_id": NODE_ID, **FAULTS["properties"]}))),
        "agree": BOOLEAN,
    },
    {"names": mapping(STRING)},  # memberlist members' names by id
)

POOL_MONITOR = obj(
    {"pool_id": POOL_ID_TEXT, "query": STRING, "results": mapping(ANY)},
    {"errors": mapping(STRING)},
)

COMPOSED = obj({"ok": {"const": True}}, {"pool_name": STRING, "pool_id": POOL_ID_TEXT})
DESTROYED = obj({"ok": {"const": True}, "pool_id": POOL_ID_TEXT, "pool_name": STRING})
