# Bad input: one error line each, and the session goes on.
break steps
run
python
for cmd in ("ulpt watch 5", "ulpt watch $rax", "ulpt watch steps", "ulpt watch nosuchvariable",
            "ulpt watch counter if", "ulpt watch", "ulpt watch counter thread 99",
            "ulpt delete 42", "ulpt condition 42 counter", "ulpt enable x"):
    try:
        gdb.execute(cmd)
    except gdb.error as e:
        print("%s: %s" % (cmd, e))
end
ulpt watch counter
continue
