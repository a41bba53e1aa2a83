/*
 * The mprotect backend's write protection through userfaultfd (Linux 5.7 and later, with
 * UFFD_FEATURE_PAGEFAULT_FLAG_WP and UFFD_FEATURE_THREAD_ID), for pages denied writes but not
 * reads in anonymous memory. mprotect(PROT_READ) binds the kernel as well as the program: a
 * system call that writes such a page (read(2) into a watched heap block) fails with EFAULT.
 * A uffd-write-protected page stays PROT_READ|PROT_WRITE; a write to it, the kernel's own
 * copy_to_user included, waits in the kernel for this file's thread, which tells the two apart
 * by the faulting thread's /proc/self/task/TID/syscall ("-1 ..." for a fault from user mode,
 * a system call's number otherwise):
 *
 * - a fault from user mode: the thread gets a SIGSEGV (rt_tgsigqueueinfo, SI_QUEUE, the
 *   address in si_value, UFFD_SIG_FAULT in si_errno); its wait is interruptible, so it leaves
 *   the fault with RIP at the instruction and mprotect.c's handler takes it as the write fault
 *   it is (the same decisions, the same out-of-line step, the page opened and closed with
 *   UFFDIO_WRITEPROTECT instead of mprotect);
 * - a fault inside a system call: the page is opened and its waiters woken, so that the copy
 *   goes on; the page is noted for the thread (kw[] below) and the thread gets a SIGSEGV marked
 *   UFFD_SIG_SYSCALL, taken when the call returns to user mode: there mprotect.c counts the
 *   kernel's write once (a copy over several pages is one write, at its first byte) and closes
 *   the page again;
 * - a fault of another process's (a vfork child sharing the memory): the page is opened, and
 *   closed again at this thread's next message or within 10 ms; that write is not seen.
 *
 * Pages that cannot be write-protected this way (file mappings such as a program's globals;
 * a kernel without the features; vm.unprivileged_userfaultfd=0 for a user without
 * CAP_SYS_PTRACE) keep mprotect, and the kernel's writes to them fail as before.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif

static int uffd = -1, stop_fd = -1;
static int unpopulated;         /* UFFD_FEATURE_WP_UNPOPULATED: no need to map pages first */
static pthread_t thr;
static int thr_on;
static uintptr_t (*slot_wp)(uintptr_t page);   /* mprotect.c: the page's write is uffd's */

/* Pages a system call wrote, per thread, until that thread takes them (one producer: the
 * thread below; each consumer clears its own entries). */
#define KW_MAX 8192
static struct { pid_t tid; uintptr_t addr; } kw[KW_MAX];
static unsigned kw_hi;          /* entries in use are below this */

/* A page of another process's write, to close again. */
static uintptr_t remote_page;

int ulpt_uffd_on_(void)
{
	return uffd >= 0;
}

static int pagemap_fd = -1;

/* Maps the pages of [a, a + len) that are not (the zero page, read): a page without an entry
 * takes no write protection before Linux 6.4. madvise, else a read of each (a kernel without
 * CONFIG_ADVISE_SYSCALLS). */
static void populate(uintptr_t a, size_t len)
{
	if (unpopulated || madvise((void *)a, len, MADV_POPULATE_READ) == 0)
		return;
	for (uintptr_t p = a; p < a + len; p += ULPT_PAGE_SIZE)
		(void)*(volatile const char *)p;
}

/* Whether every page of [a, a + len) is write-protected now (pagemap's bit 57, PM_UFFD_WP):
 * a protection that did not take is refused, never silently lost. Unknown: taken to be. */
static int all_wp(uintptr_t a, size_t len)
{
	uint64_t e[64];

	for (uintptr_t p = a; p < a + len && pagemap_fd >= 0;) {
		size_t n = (a + len - p) / ULPT_PAGE_SIZE;

		n = n > 64 ? 64 : n;
		if (pread(pagemap_fd, e, n * 8, (off_t)(p / ULPT_PAGE_SIZE * 8)) != (ssize_t)(n * 8))
			return 1;
		for (size_t i = 0; i < n; i++)
			if (!((e[i] >> 57) & 1))
				return 0;
		p += n * ULPT_PAGE_SIZE;
	}
	return 1;
}

static int wp_ioctl(uintptr_t a, size_t len, __u64 mode)
{
	struct uffdio_writeprotect w = { .range = { a, len }, .mode = mode };

	return ioctl(uffd, UFFDIO_WRITEPROTECT, &w) == 0 ? 0 : -errno;
}

/*
 * Write-protects [a, a + len) (protect) or opens it (wake: its waiters go on). Registers the
 * range at its first protection. -EOPNOTSUPP if it cannot be (not anonymous memory: the
 * caller keeps mprotect for it).
 */
int ulpt_uffd_protect_(uintptr_t a, size_t len, int protect, int wake)
{
	__u64 mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : wake ? 0 : UFFDIO_WRITEPROTECT_MODE_DONTWAKE;
	int e;

	if (uffd < 0)
		return -EOPNOTSUPP;
	/* protect 2: the page is mapped (a step's, just written). */
	if (protect == 1)
		populate(a, len);
	e = wp_ioctl(a, len, mode);
	if (e != -ENOENT)
		return e ? e : protect == 1 && !all_wp(a, len) ? -EOPNOTSUPP : 0;
	if (!protect)
		return 0;               /* never registered: nothing to open */
	struct uffdio_register r = { .range = { a, len }, .mode = UFFDIO_REGISTER_MODE_WP };

	if (ioctl(uffd, UFFDIO_REGISTER, &r) != 0)
		return -EOPNOTSUPP;
	populate(a, len);
	e = wp_ioctl(a, len, mode);
	/* Across mappings of different flags: page by page. */
	for (uintptr_t p = a; e == -ENOENT && p < a + len; p += ULPT_PAGE_SIZE)
		if ((e = wp_ioctl(p, ULPT_PAGE_SIZE, mode)) == 0 && p + ULPT_PAGE_SIZE < a + len)
			e = -ENOENT;
	return e || !all_wp(a, len) ? -EOPNOTSUPP : 0;
}

/* The threads' /proc/self/task/TID/syscall, open (read again with pread): by tid modulo. */
#define NFD 64
static struct { pid_t tid; int fd; } fds[NFD];
static pid_t my_pid;
static uid_t my_uid;

static int syscall_fd(pid_t tid, int fresh)
{
	int i = (int)((unsigned)tid % NFD);
	char path[64];

	if (fds[i].tid == tid && fds[i].fd >= 0 && !fresh)
		return fds[i].fd;
	if (fds[i].tid && fds[i].fd >= 0)
		close(fds[i].fd);
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	fds[i].tid = tid;
	fds[i].fd = open(path, O_RDONLY | O_CLOEXEC);
	return fds[i].fd;
}

static void fds_forget(void)
{
	for (int i = 0; i < NFD; i++) {
		if (fds[i].tid && fds[i].fd >= 0)
			close(fds[i].fd);
		fds[i].tid = 0;
	}
}

/* What the thread tid is doing, from /proc/self/task/TID/syscall: 'U' in a fault from user
 * mode, 'S' in a system call, 'R' running (its fault is over), 'X' not one of ours. */
static char thread_state(pid_t tid)
{
	char buf[64];
	int fd, n = 0;

	for (int tries = 0; tries < 3; tries++) {
		/* An open file of a thread that is gone (its tid reused since) fails: once more. */
		fd = syscall_fd(tid, 0);
		n = fd < 0 ? -1 : (int)pread(fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0) {
			fd = syscall_fd(tid, 1);
			n = fd < 0 ? -1 : (int)pread(fd, buf, sizeof(buf) - 1, 0);
		}
		if (n <= 0)
			return 'X';
		buf[n] = 0;
		if (buf[0] == '-')
			return 'U';
		if (buf[0] >= '0' && buf[0] <= '9')
			return 'S';
		sched_yield();      /* "running": not stopped yet, or its fault is over */
	}
	return 'R';
}

static void send(pid_t tid, uintptr_t addr, int what)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = SIGSEGV;
	si.si_code = SI_QUEUE;
	si.si_errno = what;
	si.si_pid = my_pid;
	si.si_uid = my_uid;
	si.si_value.sival_ptr = (void *)addr;
	syscall(SYS_rt_tgsigqueueinfo, my_pid, tid, SIGSEGV, &si);
}

static void kw_add(pid_t tid, uintptr_t addr)
{
	for (;;) {
		unsigned hi = __atomic_load_n(&kw_hi, __ATOMIC_ACQUIRE);

		for (unsigned i = 0; i < KW_MAX; i++)
			if (!__atomic_load_n(&kw[i].tid, __ATOMIC_ACQUIRE)) {
				kw[i].addr = addr;
				__atomic_store_n(&kw[i].tid, tid, __ATOMIC_RELEASE);
				if (i >= hi)
					__atomic_store_n(&kw_hi, i + 1, __ATOMIC_RELEASE);
				return;
			}
		/* Full: entries of threads that are gone are dropped, else wait for the others. */
		for (unsigned i = 0; i < KW_MAX; i++)
			if (thread_state(kw[i].tid) == 'X')
				__atomic_store_n(&kw[i].tid, 0, __ATOMIC_RELEASE);
		sched_yield();
	}
}

/* The pages system calls of thread tid wrote, taken (cleared) into addr[]: how many. */
unsigned ulpt_uffd_take_(pid_t tid, uintptr_t *addr, unsigned max)
{
	unsigned n = 0, hi = __atomic_load_n(&kw_hi, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < hi && n < max; i++)
		if (__atomic_load_n(&kw[i].tid, __ATOMIC_ACQUIRE) == tid) {
			addr[n++] = kw[i].addr;
			__atomic_store_n(&kw[i].tid, 0, __ATOMIC_RELEASE);
		}
	return n;
}

static int kw_has(pid_t tid)
{
	unsigned hi = __atomic_load_n(&kw_hi, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < hi; i++)
		if (__atomic_load_n(&kw[i].tid, __ATOMIC_ACQUIRE) == tid)
			return 1;
	return 0;
}

/*
 * A fault inside a system call with a signal pending (ours, sent at its previous page, or the
 * program's) does not wait: the kernel retries it at once, again and again, and the thread
 * reads as running. It is one when the thread has pages of its call not yet taken (it has not
 * returned to user mode since), or when the same fault comes again after one seen running
 * (a fault from user mode returns to take the signal, and waits the next time).
 */
static pid_t running_tid;
static uintptr_t running_page;

/* Whether the page is write-protected now: a message about one that is not is over (a
 * fault retried while a signal was pending leaves several behind it). */
static int still_wp(uintptr_t page)
{
	return all_wp(page, ULPT_PAGE_SIZE);
}

/*
 * Wakes the page's waiters without opening it: for a message taken as over. A thread may still
 * wait on it: one whose fault came while a step had the page open without waking (DONTWAKE),
 * or that read as running just before it began to wait. Woken, it makes its access again, and
 * faults again (a new message) if the page is protected by then. Without this it waited for
 * ever (wl-api's 4 threads writing one page hung 2 runs in 3).
 */
static void wake_page(uintptr_t page)
{
	struct uffdio_range r = { page, ULPT_PAGE_SIZE };

	ioctl(uffd, UFFDIO_WAKE, &r);
}

static void fault(uintptr_t addr, pid_t tid)
{
	uintptr_t page = addr & ~(uintptr_t)(ULPT_PAGE_SIZE - 1);
	char st;

	if (!slot_wp(page)) {           /* its rights changed meanwhile: nothing to wait for */
		wp_ioctl(page, ULPT_PAGE_SIZE, 0);
		return;
	}
	if (!still_wp(page)) {
		wake_page(page);
		return;
	}
	st = thread_state(tid);
	if (st == 'R' && (kw_has(tid) || (running_tid == tid && running_page == page)))
		st = 'S';
	running_tid = st == 'R' ? tid : 0;
	running_page = page;
	switch (st) {
	case 'U':
		send(tid, addr, UFFD_SIG_FAULT);
		break;
	case 'S':
		/* The signal first: pending before the copy goes on, it is taken as the call
		 * returns to user mode (sent after the wake, it could come later). */
		kw_add(tid, addr);
		send(tid, addr, UFFD_SIG_SYSCALL);
		wp_ioctl(page, ULPT_PAGE_SIZE, 0);
		break;
	case 'X':
		if (remote_page && slot_wp(remote_page))
			wp_ioctl(remote_page, ULPT_PAGE_SIZE, UFFDIO_WRITEPROTECT_MODE_WP);
		remote_page = page;
		wp_ioctl(page, ULPT_PAGE_SIZE, 0);
		break;
	default:
		wake_page(page);        /* the fault is over, or about to wait: see wake_page */
		break;
	}
}

static void *uffd_main(void *arg)
{
	struct pollfd p[2] = { { .fd = uffd, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN } };
	struct uffd_msg m;

	(void)arg;
	for (;;) {
		int n = poll(p, 2, remote_page ? 10 : -1);

		if (p[1].revents)
			break;
		if (remote_page && (n == 0 || p[0].revents)) {
			if (slot_wp(remote_page))
				wp_ioctl(remote_page, ULPT_PAGE_SIZE, UFFDIO_WRITEPROTECT_MODE_WP);
			remote_page = 0;
		}
		/* One message at a time: a page opened for one may end the waits of the next. */
		if (n <= 0 || read(uffd, &m, sizeof(m)) != sizeof(m))
			continue;
		if (m.event == UFFD_EVENT_PAGEFAULT && (m.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP))
			fault((uintptr_t)m.arg.pagefault.address, (pid_t)m.arg.pagefault.feat.ptid);
	}
	return NULL;
}

/* The thread, started with every signal blocked (the program's signals are not its), and
 * with glibc's pthread_create: not a tool's wrapper (a thread of the program's). */
static int start(void)
{
	static __typeof__(pthread_create) *real;
	sigset_t all, old;
	int e;

	if (!real)
		real = (__typeof__(pthread_create) *)dlsym(RTLD_NEXT, "pthread_create");
	if (!real)
		real = pthread_create;
	my_pid = getpid();
	my_uid = getuid();
	if (pagemap_fd >= 0)
		close(pagemap_fd);      /* a forked child's is its parent's memory */
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = real(&thr, NULL, uffd_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	thr_on = e == 0;
	return -e;
}

static int open_uffd(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	__u64 need = UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_THREAD_ID |
		     UFFD_FEATURE_EXACT_ADDRESS;
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -1;
	/* Ask what the kernel has (a first API call with no features), then for what we use. */
	if (ioctl(fd, UFFDIO_API, &api) != 0 || (api.features & need) != need) {
		close(fd);
		return -1;
	}
	unpopulated = (api.features & UFFD_FEATURE_WP_UNPOPULATED) != 0;
	close(fd);
	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	api = (struct uffdio_api){ .api = UFFD_API,
				   .features = need | (unpopulated ? UFFD_FEATURE_WP_UNPOPULATED : 0) };
	if (fd < 0 || ioctl(fd, UFFDIO_API, &api) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void stop(void)
{
	uint64_t one = 1;

	if (thr_on) {
		if (write(stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(thr, NULL);
		thr_on = 0;
	}
	fds_forget();
	if (uffd >= 0)
		close(uffd);            /* unregisters every range and wakes its waiters */
	if (stop_fd >= 0)
		close(stop_fd);
	uffd = stop_fd = -1;
	remote_page = 0;
}

/* A forked child has the pages and none of the protection (no UFFD_FEATURE_EVENT_FORK: its
 * mappings lose the registration) nor the thread: its own of both, for the same pages. */
static void atfork_child(void)
{
	if (uffd < 0)
		return;
	close(uffd);
	close(stop_fd);
	uffd = stop_fd = -1;
	thr_on = 0;
	remote_page = 0;
	fds_forget();
	memset(kw, 0, sizeof(kw));
	kw_hi = 0;
	if ((uffd = open_uffd()) < 0 || (stop_fd = eventfd(0, EFD_CLOEXEC)) < 0 || start() != 0) {
		stop();
		ulpt_uffd_lost_();      /* mprotect.c: those pages back to mprotect */
		return;
	}
	ulpt_uffd_rearm_();
}

/* 0 and the thread running, or -1: no write protection through userfaultfd here. */
int ulpt_uffd_init_(uintptr_t (*is_wp)(uintptr_t page))
{
	static int once;

	slot_wp = is_wp;
	if (uffd >= 0)
		return 0;
	if (getenv("ULPT_NO_UFFD"))
		return -1;
	if ((uffd = open_uffd()) < 0)
		return -1;
	if ((stop_fd = eventfd(0, EFD_CLOEXEC)) < 0 || start() != 0) {
		stop();
		return -1;
	}
	if (!once) {
		once = 1;
		pthread_atfork(NULL, NULL, atfork_child);
	}
	return 0;
}

void ulpt_uffd_fini_(void)
{
	stop();
}
