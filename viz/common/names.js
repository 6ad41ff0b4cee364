// Members' names, for the pages that show members by id (events, timeline, view matrix).
//
// A node speaking memberlist names its members (/api/topology rows carry `name`, the view
// matrix a `names` map); a page learns them as they come, and `memberName` says
// "node <id>" for a member whose name it has not learned (every member, in a cluster that
// speaks rtsim's own protocol).

const known = new Map();

/** Learn names from topology rows ({node_id, name}) or a {id: name} map. */
export function learnNames(source) {
  if (Array.isArray(source)) {
    for (const n of source) if (n.name) known.set(String(n.node_id), n.name);
  } else {
    for (const [id, name] of Object.entries(source ?? {})) known.set(String(id), name);
  }
}

/** How a page names member `id`. */
export function memberName(id) {
  return known.get(String(id)) ?? `node ${id}`;
}
