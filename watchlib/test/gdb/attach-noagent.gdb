# Attached with -p to a running program without the agent: ulpt watch loads it, or says in
# one line why it cannot (its per-thread state needs room in the static TLS block that a
# running program may not have); the session goes on.
python
try:
    gdb.execute("ulpt watch counter")
except gdb.error as e:
    print(e)
end
set var go = 1
continue
