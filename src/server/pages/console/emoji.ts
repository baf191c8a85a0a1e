/**
 * Reactions as the console shows them: a reaction's code (`:tada:`) as its emoji where the console
 * knows it (the code itself otherwise), and the few emoji a person picks from to react.
 */

const GLYPHS: Readonly<Record<string, string>> = {
  ':thumbsup:': '👍',
  ':+1:': '👍',
  ':thumbsdown:': '👎',
  ':-1:': '👎',
  ':tada:': '🎉',
  ':heart:': '❤️',
  ':eyes:': '👀',
  ':joy:': '😂',
  ':smile:': '😄',
  ':slightly_smiling_face:': '🙂',
  ':white_check_mark:': '✅',
  ':heavy_check_mark:': '✔️',
  ':x:': '❌',
  ':rocket:': '🚀',
  ':fire:': '🔥',
  ':pray:': '🙏',
  ':clap:': '👏',
  ':wave:': '👋',
  ':thinking_face:': '🤔',
  ':100:': '💯',
  ':star:': '⭐',
};

/** What a reaction's code looks like on the page: its emoji, or the code when the console does not know it. */
export const glyphOf = (code: string): string => GLYPHS[code] ?? code;

/** The emoji offered by a message's "Add a reaction" menu. */
export const REACT_CHOICES: readonly string[] = [
  ':thumbsup:',
  ':tada:',
  ':heart:',
  ':eyes:',
  ':joy:',
  ':white_check_mark:',
];
