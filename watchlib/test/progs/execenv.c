/*
 * execenv: execs a shell that prints LD_PRELOAD. Under ulpt-watch the agent must not follow
 * the exec ("preload=[]") unless --follow-exec is given (then the agent's path is there).
 */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	char *argv[] = { "sh", "-c", "echo \"preload=[$LD_PRELOAD]\"", NULL };

	fflush(stdout);
	execvp("sh", argv);
	perror("execvp");
	return 127;
}
