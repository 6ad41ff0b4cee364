"""The hostile-input suite (issue 12, item 5): real 2-node clusters sent malformed, oversized,
slow and flooding input over HTTP, UDP and TCP, then checked alive, healthy within 1 s, whole in
membership and data, and counting what they dropped.

    conftest      the per-module cluster, the session's tally, the summary table
    cluster       start the cluster with known data; ``check_intact`` after each class
    attack        send HTTP probes and judge them; health sampled during an attack
    rawhttp       a raw HTTP/1.1 client (bytes out exactly as written, h11 parses answers)
    http_inputs   hostile paths, query strings, forwards (from ``GET /api/routes``)
    http_framing  hostile request lines, headers, framing and bodies
    wire_inputs   hostile UDP datagrams for SWIM and TCP frames for the node RPC
    memberlist_inputs   hostile memberlist packets and streams (nodes with ``--wire memberlist``)
    udp_door      send datagrams paced or at full speed; count what the node and kernel dropped
    tally         what each class sent and got, written to tests/artifacts/hostile-tally.json
    test_http, test_udp, test_tcp, test_memberlist   one door each, one cluster each
"""
