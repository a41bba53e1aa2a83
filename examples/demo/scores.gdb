# ulpt-gdb's README tutorial: a watchpoint on each of the 1,000 scores, then to the third write.
break main
run
python [gdb.execute("ulpt watch -l scores[%d]" % i, to_string=True) for i in range(1000)]
ulpt info watchpoints 999-1001
continue
continue
continue
bt
