/** MODEL_LOG=1: each step of the model test on stderr as it runs (jest holds console output until a test ends). */
export const stepLog: (line: string) => void = process.env.MODEL_LOG === '1' ? (line) => void process.stderr.write(`[model] ${line}\n`) : () => undefined;
