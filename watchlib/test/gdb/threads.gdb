# Two threads: each stop names its thread; a watchpoint with thread N stops only for it.
break threads
run
ulpt watch by_thread[0]
ulpt watch by_thread[1]
continue
continue
continue
