"""The task daemon (SPEC §9) and its clients: the server, the evaluator's remote interpreter,
and `test-patch`.

Interpreter layer. `service` holds the daemon's behaviour apart from HTTP, one action at a
time (`turns`), standing on its `ports` (the sessions, the shell, the reads asked as effects);
`app` the FastAPI routes, `binding` the sockets (the admin socket bound first thing) and
`starting` their answers until the server takes them, `server` the listeners and signals
(`accepting` their connections, `workers` their threads), `sessions` and `reads` the real
system side, `startup` the order in which the daemon starts (through the one set-up; its
options in `settings`) and `serving` what loads once the agent-facing socket is bound,
`client` the httpx client, `remote` the interpreters that answer effects over the API and
`console` the version; the click commands are `interpreters.cli.daemon`'s.
"""
