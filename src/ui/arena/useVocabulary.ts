// The words of a recipe's rollouts (contract/vocabulary.ts), from the worker's recipe listing: the
// arena, its cards and the lesson read them here, never a world's words of their own.
import { UNKNOWN_VOCABULARY, type Vocabulary } from '../../contract/vocabulary';
import { useSetup } from '../../store/setupStore';

/** `recipe`'s vocabulary; no outcome words for a recipe this page does not list (a replayed log of another version). */
export function useVocabulary(recipe: string | undefined): Vocabulary {
  return useSetup((s) => s.recipes.find((r) => r.name === recipe)?.vocabulary) ?? UNKNOWN_VOCABULARY;
}
