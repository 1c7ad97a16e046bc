/* entry.c — sandboxd-agent's entry point. Not linked into sandboxd-nsbox, whose PID 1 calls
 * agent_main itself (main.c; backends/local/init/main.c). */
#include "backends/agent/prog/agent.h"

/* Entry point. */
int
main(int argc, char **argv)
{
        return agent_main(argc, argv);
}
